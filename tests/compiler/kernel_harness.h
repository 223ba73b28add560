// Running kernels of the library on one simulated tile, for the kernel
// tests: the library image (compile_runtime + compile_kernels, linked by
// link_runtime), a supervisor built with isa::CodeBuilder that starts one
// worker per argument block and waits for them, launch after launch
// (KernelRun::then), the argument blocks in an .args segment, input bytes
// in data segments, and outputs read back through bindings.
//
//   KernelHarness harness(library);
//   KernelRun run{"gemm_f143_0", {block0, block1}};
//   run.inputs.push_back({address, bytes});
//   run.outputs.push_back({address, size});
//   KernelResult result = harness.run(run);
#pragma once

#include "compiler/kernel_library.h"
#include "isa/code_builder.h"
#include "package/package.h"
#include "sim/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tilec::compiler::testing {

// Argument blocks live in standard memory, data in interleaved memory.
constexpr std::uint32_t kArgumentBase = 0x78000;
constexpr std::uint32_t kDataBase = 0x80000;
constexpr std::uint32_t kDataEnd = 0xE8000;

struct Bytes {
  std::uint32_t address = 0;
  std::vector<std::uint8_t> bytes;
};

struct Region {
  std::uint32_t address = 0;
  std::uint32_t size = 0;
};

// A kernel started once per argument block (more than six wait for a
// worker to become idle).
struct KernelLaunch {
  std::string kernel;
  std::vector<std::vector<std::uint32_t>> blocks;
};

struct KernelRun {
  std::string kernel;
  std::vector<std::vector<std::uint32_t>> blocks;  // one per worker, 1..6
  std::vector<Bytes> inputs;
  std::vector<Region> outputs;
  std::vector<KernelLaunch> then;  // launched after the first, in order, a wsync after each
};

struct KernelResult {
  std::vector<std::vector<std::uint8_t>> outputs;  // as KernelRun::outputs
  sim::TileStats stats;
  // From the first worker's first bundle to the last worker's exit.
  std::uint64_t kernel_cycles = 0;
  std::vector<std::uint64_t> worker_cycles;  // each worker's run -> exit
  // Per launch (the first, then `then`'s): each block's run -> exit, in
  // block order, and the launch's span from its first bundle to its last exit.
  std::vector<std::vector<std::uint64_t>> block_cycles;
  std::vector<std::uint64_t> launch_cycles;
};

// Hands out aligned, disjoint places in interleaved memory.
class DataPlaces {
 public:
  std::uint32_t take(std::uint32_t bytes, std::uint32_t alignment = 16) {
    next_ = (next_ + alignment - 1) / alignment * alignment;
    std::uint32_t address = next_;
    next_ += bytes;
    if (next_ > kDataEnd) throw std::runtime_error("test data does not fit the tile");
    return address;
  }

 private:
  std::uint32_t next_ = kDataBase;
};

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

class KernelHarness {
 public:
  explicit KernelHarness(const KernelLibrary& library)
      : machine_(ipu21_cut(1)), runtime_(compile_runtime()), variants_(compile_kernels(library)),
        image_(link_runtime({&runtime_, &variants_}, machine_)) {}

  KernelResult run(const KernelRun& run) const {
    package::TileImage tile;
    std::vector<std::uint32_t> words;
    std::vector<KernelLaunch> launches{KernelLaunch{run.kernel, run.blocks}};
    launches.insert(launches.end(), run.then.begin(), run.then.end());
    std::vector<std::pair<std::string, std::vector<std::uint32_t>>> started;  // kernel, block addresses
    for (const KernelLaunch& launch : launches) {
      started.emplace_back(launch.kernel, std::vector<std::uint32_t>{});
      for (const auto& block : launch.blocks) {
        started.back().second.push_back(kArgumentBase + static_cast<std::uint32_t>(words.size()) * 4);
        words.insert(words.end(), block.begin(), block.end());
      }
    }
    // The supervisor's image holds the library's segments and symbols too.
    isa::Image supervisor = supervisor_image(started);
    for (const isa::Segment& segment : supervisor.segments)
      tile.segments.push_back(package::Segment{segment.name, segment.address, segment.bytes, segment.executable});
    for (const isa::LinkedSymbol& symbol : supervisor.symbols)
      if (symbol.global)
        tile.symbols.push_back(package::Symbol{symbol.name, symbol.address, symbol.size, package::SymbolKind::Kernel});
    tile.entry = supervisor.entry;
    tile.segments.push_back(data_segment(".args", kArgumentBase, bytes_of(words)));
    for (std::size_t i = 0; i < run.inputs.size(); ++i)
      tile.segments.push_back(data_segment(fmt::format(".input{}", i), run.inputs[i].address, run.inputs[i].bytes));

    package::Package package;
    package.target = machine_.name;
    package.tiles.push_back(std::move(tile));
    for (std::size_t i = 0; i < run.outputs.size(); ++i) {
      package::Piece piece{0, run.outputs[i].address, {0}, {run.outputs[i].size}, {1}};
      graph::TensorType type{{run.outputs[i].size}, {ElementType::F143, 0}};
      package.bindings.push_back(
          package::Binding{fmt::format("out{}", i), package::BindingRole::Output, type, {piece}});
    }

    sim::Device device(package, machine_);
    sim::RunResult simulated = device.run();
    KernelResult result;
    result.stats = simulated.tiles.at(0);
    for (std::size_t i = 0; i < run.outputs.size(); ++i)
      result.outputs.push_back(device.read(fmt::format("out{}", i)).bytes);
    std::uint64_t first = UINT64_MAX, last = 0;
    std::vector<sim::ProfileEvent> spans;
    for (const sim::ProfileEvent& event : simulated.profile.tiles.at(0)) {
      if (event.kind != sim::ProfileEventKind::WorkerKernel) continue;
      first = std::min(first, event.begin);
      last = std::max(last, event.end);
      result.worker_cycles.push_back(event.end - event.begin);
      spans.push_back(event);
    }
    result.kernel_cycles = last > first ? last - first : 0;
    // Workers start in block order, launch after launch.
    std::stable_sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
    std::size_t next = 0;
    for (const KernelLaunch& launch : launches) {
      std::uint64_t begin = UINT64_MAX, end = 0;
      result.block_cycles.emplace_back();
      for (std::size_t b = 0; b < launch.blocks.size() && next < spans.size(); ++b, ++next) {
        result.block_cycles.back().push_back(spans[next].end - spans[next].begin);
        begin = std::min(begin, spans[next].begin);
        end = std::max(end, spans[next].end);
      }
      result.launch_cycles.push_back(end > begin ? end - begin : 0);
    }
    return result;
  }

 private:
  static package::Segment data_segment(std::string name, std::uint32_t address, std::vector<std::uint8_t> bytes) {
    return package::Segment{std::move(name), address, std::make_shared<std::vector<std::uint8_t>>(std::move(bytes)),
                            false};
  }

  static isa::Instruction make(isa::Opcode opcode, std::initializer_list<std::int32_t> operands) {
    isa::Instruction instruction{opcode, {}};
    int i = 0;
    for (std::int32_t operand : operands) instruction.operands[i++] = operand;
    return instruction;
  }

  // xdone (no exchange), then per launch `run` once per block and wsync; halt.
  isa::Image supervisor_image(
      const std::vector<std::pair<std::string, std::vector<std::uint32_t>>>& launches) const {
    using isa::Opcode;
    isa::CodeBuilder code("kernel test supervisor");
    code.section(".text", {.executable = true, .memory = isa::MemoryWish::Standard});
    code.label("main");
    code.set_global("main");
    code.instruction(make(Opcode::Xdone, {}));
    for (const auto& [kernel, blocks] : launches) {
      code.instruction(isa::Operation(make(Opcode::Setzi, {2, 0}), isa::SymbolRef{kernel}));
      for (std::uint32_t block : blocks) {
        code.instruction(make(Opcode::Setzi, {3, static_cast<std::int32_t>(block)}));
        code.instruction(make(Opcode::Run, {2, 3}));
      }
      code.instruction(make(Opcode::Wsync, {}));
    }
    code.instruction(make(Opcode::Halt, {}));
    isa::Object object = code.finish();
    isa::LinkOptions options;
    options.machine = &machine_;
    options.entry = "main";
    const isa::Object* objects[] = {&object};
    const isa::Image* images[] = {&image_};
    return isa::link(objects, options, images);
  }

  MachineModel machine_;
  isa::Object runtime_;
  isa::Object variants_;
  isa::Image image_;
};

}  // namespace tilec::compiler::testing
