// Random valid instructions and the round-trip property they must satisfy:
// encode -> decode -> print -> parse -> encode gives the same bits. Shared by
// the round-trip test (a short run) and bench/isa_fuzz_bench (a long one).
#pragma once

#include "isa/isa.h"

#include <optional>
#include <random>
#include <string>

namespace tilec::isa {

class InstructionSampler {
 public:
  explicit InstructionSampler(std::uint64_t seed) : random_(seed) {}

  // A valid instruction of `spec`; operands are often the extremes of their
  // range (smallest, largest, zero), otherwise uniform.
  Instruction instruction(const InstructionSpec& spec);
  // A valid bundle of any two instructions of the right slots.
  Bundle bundle();
  // A 32-bit word biased towards decodable ones: a table opcode with random
  // upper bits, or fully random.
  std::uint32_t word();

 private:
  std::int64_t operand(const FieldSpec& field);

  std::mt19937_64 random_;
};

// Why `bundle` fails the round trip, or nullopt when it passes.
std::optional<std::string> bundle_round_trip_problem(const Bundle& bundle);
// For a word that decodes in `slot`: why printing and re-encoding it does
// not give the same word (nullopt when it does, or when it does not decode).
std::optional<std::string> word_round_trip_problem(std::uint32_t word, Slot slot);

}  // namespace tilec::isa
