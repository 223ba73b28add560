// The modulo scheduler (compiler/kernel_schedule.h): on random loop bodies,
// the pipelined loop (prologue, repeated body, epilogue) runs every
// instruction of every iteration exactly once and each reads the values the
// sequential loop would give it; on known bodies it reaches the busier
// slot's bound.
#include "compiler/kernel_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>

namespace tilec::compiler {
namespace {

using isa::Slot;

// What each instruction instance read: per register, (writer op, writer
// iteration) of the value it found, -1 for the loop's initial value.
using Reads = std::map<std::pair<int, int>, std::vector<std::pair<int, int>>>;

struct Machine {
  std::map<int, std::pair<int, int>> registers;  // register -> last writer
  std::vector<int> executed;                     // per op: instances run

  std::vector<std::pair<int, int>> read(RegisterMask mask) {
    std::vector<std::pair<int, int>> values;
    for (int r = 0; r < 64; ++r)
      if (mask >> r & 1) {
        auto it = registers.find(r);
        values.push_back(it == registers.end() ? std::pair{-1, -1} : it->second);
      }
    return values;
  }
  void write(RegisterMask mask, int op, int iteration) {
    for (int r = 0; r < 64; ++r)
      if (mask >> r & 1) registers[r] = {op, iteration};
  }
};

Reads run_sequential(const std::vector<KernelOp>& ops, int iterations) {
  Machine machine;
  Reads reads;
  for (int i = 0; i < iterations; ++i)
    for (std::size_t op = 0; op < ops.size(); ++op) {
      reads[{static_cast<int>(op), i}] = machine.read(ops[op].reads);
      machine.write(ops[op].writes, static_cast<int>(op), i);
    }
  return reads;
}

// Instruction texts are "op<index>"; a bundle line holds one or two.
std::vector<int> ops_of(const std::string& line) {
  std::vector<int> found;
  for (std::size_t at = line.find("op"); at != std::string::npos; at = line.find("op", at + 2))
    found.push_back(std::stoi(line.substr(at + 2)));
  return found;
}

Reads run_pipelined(const std::vector<KernelOp>& ops, const ModuloSchedule& schedule, int iterations) {
  Machine machine;
  machine.executed.assign(ops.size(), 0);
  Reads reads;
  auto issue = [&](const std::string& line) {
    std::vector<int> bundle = ops_of(line);
    EXPECT_LE(bundle.size(), 2u) << line;
    std::vector<std::pair<int, std::vector<std::pair<int, int>>>> seen;
    for (int op : bundle) seen.push_back({op, machine.read(ops[static_cast<std::size_t>(op)].reads)});
    for (auto& [op, values] : seen) reads[{op, machine.executed[static_cast<std::size_t>(op)]}] = values;
    for (int op : bundle) machine.write(ops[static_cast<std::size_t>(op)].writes, op, machine.executed[static_cast<std::size_t>(op)]++);
  };
  for (const std::string& line : schedule.prologue) issue(line);
  for (int i = 0; i < iterations - (schedule.stages - 1); ++i)
    for (const std::string& line : schedule.body) issue(line);
  for (const std::string& line : schedule.epilogue) issue(line);
  for (int count : machine.executed) EXPECT_EQ(count, iterations);
  return reads;
}

std::vector<KernelOp> random_body(std::mt19937& random) {
  std::vector<KernelOp> ops(3 + random() % 10);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    KernelOp& op = ops[i];
    op.slot = random() % 2 ? Slot::Main : Slot::Float;
    op.text = "op" + std::to_string(i);
    for (int n = random() % 3; n > 0; --n) op.reads |= RegisterMask{1} << (random() % 16);
    op.writes = RegisterMask{1} << (random() % 16);
    if (random() % 4 == 0) op.reads |= op.writes;  // a pointer stepping
  }
  return ops;
}

// Loads through a pointer, a chain of float instructions on what was
// loaded, stores through another pointer: chains longer than the busier
// slot's count, which only overlapping iterations can hide.
std::vector<KernelOp> random_stream(std::mt19937& random) {
  std::vector<KernelOp> ops;
  std::vector<int> written;
  auto add = [&](Slot slot, RegisterMask writes, RegisterMask reads) {
    ops.push_back(KernelOp{slot, "op" + std::to_string(ops.size()), reads, writes});
  };
  const int loads = 1 + static_cast<int>(random() % 3);
  for (int i = 0; i < loads; ++i) {
    written.push_back(static_cast<int>(random() % 12));
    add(Slot::Main, a_reg(written.back()) | m_reg(6), m_reg(6));
  }
  for (int i = static_cast<int>(random() % 6); i >= 0; --i) {
    const int source = written[random() % written.size()];
    written.push_back(static_cast<int>(random() % 12));
    add(Slot::Float, a_reg(written.back()), a_reg(source) | a_reg(written[random() % written.size()]));
  }
  for (int i = 1 + static_cast<int>(random() % 2); i > 0; --i)
    add(Slot::Main, m_reg(4), a_reg(written[written.size() - 1 - random() % 2]) | m_reg(4));
  return ops;
}

TEST(KernelSchedule, PipelinedLoopsReadWhatTheSequentialLoopReads) {
  std::mt19937 random(7);
  int pipelined = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<KernelOp> ops = trial % 3 ? random_stream(random) : random_body(random);
    const int max_stages = 1 + trial % 3;
    std::optional<ModuloSchedule> schedule = modulo_schedule(ops, max_stages);
    ASSERT_TRUE(schedule) << "trial " << trial;
    ASSERT_LE(schedule->stages, max_stages);
    ASSERT_EQ(schedule->body.size(), static_cast<std::size_t>(schedule->interval));
    pipelined += schedule->stages > 1;
    for (int iterations : {max_stages - 1, max_stages, max_stages + 3}) {
      if (iterations < 1) continue;
      EXPECT_EQ(run_pipelined(ops, *schedule, iterations), run_sequential(ops, iterations)) << "trial " << trial;
    }
  }
  EXPECT_GT(pipelined, 50);  // the property covers overlapped iterations
}

KernelOp op(Slot slot, int index, RegisterMask writes, RegisterMask reads) {
  return KernelOp{slot, "op" + std::to_string(index), reads, writes};
}

TEST(KernelSchedule, ReachesTheBusierSlotsCountOnAStream) {
  // Load, two conversions, store of a stream (pointers $m6, $m4): unpipelined
  // 5 bundles per element group; pipelined the 3 main-slot instructions.
  const std::vector<KernelOp> ops{
      op(Slot::Main, 0, a_quad(0) | m_reg(6), m_reg(6)), op(Slot::Main, 1, a_quad(4) | m_reg(6), m_reg(6)),
      op(Slot::Float, 2, a_pair(8), a_quad(0)), op(Slot::Float, 3, a_pair(10), a_quad(4)),
      op(Slot::Main, 4, m_reg(4), a_quad(8) | m_reg(4))};
  std::optional<ModuloSchedule> schedule = modulo_schedule(ops, 3);
  ASSERT_TRUE(schedule);
  EXPECT_EQ(schedule->interval, 3);
  EXPECT_GT(schedule->stages, 1);
  EXPECT_EQ(sequential_body(ops).size(), 5u);
}

}  // namespace
}  // namespace tilec::compiler
