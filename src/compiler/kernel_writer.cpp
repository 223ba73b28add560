#include "compiler/kernel_writer.h"

#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace tilec::compiler {

namespace {

// Bundles `later` must follow `earlier` by (program order), or -1.
int distance(const KernelOp& earlier, const KernelOp& later) {
  if ((earlier.writes & later.reads) || (earlier.writes & later.writes)) return 1;
  if (earlier.reads & later.writes) return 0;
  return -1;
}

// Two pipeline stages at most: a loop of any trip count >= 1 runs.
constexpr int kMaxStages = 2;

ModuloSchedule schedule_of(const std::vector<KernelOp>& body) {
  std::optional<ModuloSchedule> schedule = modulo_schedule(body, kMaxStages);
  TILEC_CHECK(schedule.has_value(), "a generated kernel loop of {} instructions has no schedule", body.size());
  return *schedule;
}

}  // namespace

KernelOp main_op(std::string text, RegisterMask writes, RegisterMask reads) {
  return KernelOp{isa::Slot::Main, std::move(text), reads, writes};
}

KernelOp float_op(std::string text, RegisterMask writes, RegisterMask reads) {
  return KernelOp{isa::Slot::Float, std::move(text), reads, writes};
}

std::vector<std::string> pack_bundles(const std::vector<KernelOp>& ops) {
  std::vector<int> time(ops.size(), 0);
  std::vector<std::array<const std::string*, 2>> bundles;
  for (std::size_t j = 0; j < ops.size(); ++j) {
    int earliest = 0;
    for (std::size_t i = 0; i < j; ++i)
      if (int d = distance(ops[i], ops[j]); d >= 0) earliest = std::max(earliest, time[i] + d);
    const auto slot = static_cast<std::size_t>(ops[j].slot);
    int t = earliest;
    while (t < static_cast<int>(bundles.size()) && bundles[static_cast<std::size_t>(t)][slot]) ++t;
    if (t >= static_cast<int>(bundles.size())) bundles.resize(static_cast<std::size_t>(t) + 1, {nullptr, nullptr});
    bundles[static_cast<std::size_t>(t)][slot] = &ops[j].text;
    time[j] = t;
  }
  std::vector<std::string> lines;
  for (const auto& [main, flt] : bundles) {
    if (main && flt) lines.push_back("{ " + *main + " ; " + *flt + " }");
    else lines.push_back(main ? *main : *flt);
  }
  return lines;
}

std::string quad_name(int q) { return fmt::format("$a{}:{}", 4 * q, 4 * q + 3); }
std::string pair_name(int first) { return fmt::format("$a{}:{}", first, first + 1); }

KernelWriter::KernelWriter(const std::string& name) : name_(name) {
  text_ = fmt::format(".section .kernels, \"x\"\n.global {0}\n.type {0}, @kernel\n{0}:\n", name);
}

int KernelWriter::pack(const std::vector<KernelOp>& ops) {
  const std::vector<std::string> lines = pack_bundles(ops);
  for (const std::string& bundle : lines) text_ += "    " + bundle + "\n";
  return static_cast<int>(lines.size());
}

int KernelWriter::line(const std::string& bundle) {
  text_ += "    " + bundle + "\n";
  return 1;
}

void KernelWriter::label(const std::string& name) { text_ += name + ":\n"; }

LoopShape KernelWriter::loop(const std::vector<KernelOp>& body, const std::string& count) {
  const ModuloSchedule schedule = schedule_of(body);
  for (const std::string& bundle : schedule.prologue) line(bundle);
  line(fmt::format("rpt {}, {}", count, schedule.body.size()));
  for (const std::string& bundle : schedule.body) line(bundle);
  for (const std::string& bundle : schedule.epilogue) line(bundle);
  return LoopShape{schedule.interval, schedule.stages,
                   static_cast<int>(schedule.prologue.size() + schedule.epilogue.size()) + 1};
}

LoopShape loop_shape(const std::vector<KernelOp>& body) {
  const ModuloSchedule schedule = schedule_of(body);
  return LoopShape{schedule.interval, schedule.stages,
                   static_cast<int>(schedule.prologue.size() + schedule.epilogue.size()) + 1};
}

std::string KernelWriter::finish() { return text_ + fmt::format(".size {0}, . - {0}\n", name_); }

}  // namespace tilec::compiler
