// Round-trip property: encode -> decode -> print -> parse -> encode gives the
// same bits, for random valid bundles and for random words that decode. The
// long run of the same check is bench/isa_fuzz_bench.
#include "isa/instruction_sampler.h"

#include <gtest/gtest.h>

namespace tilec::isa {
namespace {

TEST(RoundTrip, RandomBundles) {
  InstructionSampler sampler(20261129);
  for (int i = 0; i < 100'000; ++i) {
    const Bundle bundle = sampler.bundle();
    auto problem = bundle_round_trip_problem(bundle);
    ASSERT_FALSE(problem) << *problem;
  }
}

TEST(RoundTrip, EveryInstructionAtItsExtremes) {
  InstructionSampler sampler(1);
  for (const InstructionSpec& spec : all_instructions())
    for (int i = 0; i < 200; ++i) {
      Bundle bundle{nop(), fnop()};
      (spec.slot == Slot::Main ? bundle.main : bundle.flt) = sampler.instruction(spec);
      auto problem = bundle_round_trip_problem(bundle);
      ASSERT_FALSE(problem) << *problem;
    }
}

TEST(RoundTrip, RandomWordsThatDecode) {
  InstructionSampler sampler(99);
  int decoded = 0;
  for (int i = 0; i < 100'000; ++i) {
    const std::uint32_t word = sampler.word();
    for (Slot slot : {Slot::Main, Slot::Float}) {
      auto problem = word_round_trip_problem(word, slot);
      ASSERT_FALSE(problem) << *problem;
      decoded += decode(word, slot).has_value();
    }
  }
  // The sampler must actually exercise the decoder.
  EXPECT_GT(decoded, 30'000);
}

TEST(RoundTrip, CatchesAMismatch) {
  // The checker itself must be able to fail: an invalid operand is reported.
  Bundle bundle{Instruction{Opcode::Add, {99, 0, 0}}, fnop()};
  EXPECT_TRUE(bundle_round_trip_problem(bundle));
}

}  // namespace
}  // namespace tilec::isa
