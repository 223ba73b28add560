// Random programs never crash or hang the simulator: each either runs to
// its end or raises a sim::Fault, and does the same thing every time.
#include "isa/instruction_sampler.h"
#include "sim/fault.h"
#include "sim_test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

namespace tilec::sim {
namespace {

using namespace testing;

// The outcome of one run: the fault's message, or the cycles and the bytes
// at kInterleavedData when it ran to the end.
std::string outcome(const package::Package& package) {
  Device device(package, ipu21_cut(static_cast<std::uint32_t>(package.tiles.size())));
  SimOptions options;
  options.watchdog_cycles = 20'000;
  try {
    RunResult result = device.run(options);
    graph::Tensor memory = device.read("memory");
    return fmt::format("ran {} cycles, {} bundles, memory hash {}", result.cycles, result.total_bundles(),
                       std::hash<std::string>{}(std::string(memory.bytes.begin(), memory.bytes.end())));
  } catch (const Fault& fault) {
    return fault.what();
  }
}

TEST(RandomPrograms, RunOrFaultAndDoTheSameEachTime) {
  isa::InstructionSampler sampler(2024);
  int faults = 0;
  for (int program = 0; program < 300; ++program) {
    // Registers start pointing into memory so that some accesses succeed;
    // the supervisor may start workers on the same random code.
    Code code;
    code.main(Opcode::Xdone);
    for (int reg = 0; reg < 15; ++reg)
      code.set(reg, (reg % 2 ? kInterleavedData : kStandardData) + 64 * static_cast<std::uint32_t>(reg));
    for (int i = 0; i < 48; ++i) code.both(sampler.bundle().main, sampler.bundle().flt);
    code.main(Opcode::Halt);
    package::Package package = package_of(2, image(code));
    package.exchange_groups = {{0, 1}};
    package.bindings = {dense_binding("memory", package::BindingRole::Output, f32_type({256}), 0, kInterleavedData)};
    std::string first = outcome(package);
    EXPECT_EQ(first, outcome(package)) << "program " << program;
    faults += first.rfind("ran ", 0) != 0;
  }
  EXPECT_GT(faults, 0);
}

}  // namespace
}  // namespace tilec::sim
