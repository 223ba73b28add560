// The long run of the round-trip property (tests/isa/roundtrip_test.cpp runs
// a short one), plus assembler robustness on mutated source: random bundles
// and random words must encode -> decode -> print -> parse -> encode to the
// same bits, and mangled assembly must give a one-line tilec::Error, never a
// crash. A failure stops the benchmark with the offending input.
//
//   build/release/bench/isa_fuzz_bench --benchmark_min_time=60
// runs each check for a minute; the seed is the benchmark's argument.
#include "isa/assembler.h"
#include "isa/instruction_sampler.h"

#include <benchmark/benchmark.h>

#include <random>

namespace {

using namespace tilec::isa;

void BM_FuzzBundleRoundTrip(benchmark::State& state) {
  InstructionSampler sampler(static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) {
    if (auto problem = bundle_round_trip_problem(sampler.bundle())) {
      state.SkipWithError(problem->c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FuzzBundleRoundTrip)->Arg(1);

void BM_FuzzWordRoundTrip(benchmark::State& state) {
  InstructionSampler sampler(static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) {
    const std::uint32_t word = sampler.word();
    for (Slot slot : {Slot::Main, Slot::Float})
      if (auto problem = word_round_trip_problem(word, slot)) {
        state.SkipWithError(problem->c_str());
        return;
      }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FuzzWordRoundTrip)->Arg(1);

// Mutates a valid source (byte flips, deletions, duplications of characters
// that matter to the syntax) and assembles it.
void BM_FuzzAssemblerInput(benchmark::State& state) {
  const std::string seed_source =
      ".equ N, 4\n.macro step q, p\n{ ld128pi \\q, $m2, 16 ; amp.f8 \\q, \\p, 0, f143, f152 }\n.endm\n"
      ".text\n.global k\n.type k, @kernel\nk: setzi $m2, buf + 8\nrpti N * 2, 1\nstep $a0:3, $a4:5\n"
      "loop: brnz $m3, loop\nbr .-1\n.size k, . - k\n.data\n.align 16\nbuf: .word 1, buf\n.half -1\n.byte 2\n"
      ".float 1.5\n.zero 3\n";
  const std::string alphabet = "$:,;{}()+-*/%<>&|^~\\@.#\"\n 0123456789xamfz";
  std::mt19937_64 random(static_cast<std::uint64_t>(state.range(0)));
  std::int64_t rejected = 0;
  for (auto _ : state) {
    std::string source = seed_source;
    for (int edits = 1 + random() % 4; edits > 0; --edits) {
      const std::size_t at = random() % source.size();
      switch (random() % 3) {
        case 0: source[at] = alphabet[random() % alphabet.size()]; break;
        case 1: source.erase(at, 1 + random() % 3); break;
        default: source.insert(source.begin() + static_cast<std::ptrdiff_t>(at), alphabet[random() % alphabet.size()]); break;
      }
      if (source.empty()) source.push_back('x');
    }
    try {
      benchmark::DoNotOptimize(assemble_text(source, "fuzz.s"));
    } catch (const tilec::Error& error) {
      ++rejected;
      if (std::string_view(error.what()).find('\n') != std::string_view::npos) {
        state.SkipWithError("multi-line error");
        break;
      }
    }
  }
  state.counters["rejected"] = benchmark::Counter(static_cast<double>(rejected), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_FuzzAssemblerInput)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
