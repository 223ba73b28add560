// Speed of the assembler and linker: the compiler assembles its kernel
// library (1-3k lines) once per compile and links a small supervisor object
// per tile against the linked library, for up to 1,472 tiles.
#include "isa/assembler.h"
#include "isa/linker.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

namespace {

using namespace tilec::isa;

// A kernel-library-like source of about `lines` lines: kernels of bundles,
// macros, .equ constants, branches, symbol references and data.
std::string generated_source(int lines) {
  std::string text =
      ".equ STEP, 16\n"
      ".macro amp_step q, p, blk\n"
      "    { ld128pi \\q, $m2, STEP ; amp.f8 \\q, \\p, \\blk, f143, f143 }\n"
      ".endm\n.text\n";
  int written = 5;
  for (int kernel = 0; written < lines; ++kernel) {
    text += fmt::format(".global kernel{0}\n.type kernel{0}, @kernel\nkernel{0}:\n", kernel);
    text += "    ldw $m2, $m0, 0\n    ldw $m3, $m0, 4\n    muli $m5, $m1, STEP * 2\n";
    text += fmt::format("loop{}:\n", kernel);
    written += 7;
    for (int i = 0; i < 40; ++i) {
      text += i % 4 == 0 ? "    amp_step $a0:3, $a4:5, 1\n"
              : i % 4 == 1 ? "    { ld64pi $a4:5, $m3, 8 ; f32v4add $a8:11, $a8:11, $a12:15 }\n"
              : i % 4 == 2 ? "    addi $m5, $m5, -1   # count down\n"
                           : fmt::format("    setzi $m6, table + {}\n", (i % 64) * 4);
      ++written;
    }
    text += fmt::format("    brnz $m5, loop{0}\n    exit\n.size kernel{0}, . - kernel{0}\n", kernel);
    written += 3;
  }
  text += ".data\n.align 16\n.global table\ntable:\n";
  for (int i = 0; i < 64; ++i) text += fmt::format("    .word {}, table + {}\n", i, i * 4);
  return text;
}

void BM_Assemble10kLines(benchmark::State& state) {
  const std::string source = generated_source(10'000);
  for (auto _ : state) benchmark::DoNotOptimize(assemble_text(source, "library.s"));
  state.SetItemsProcessed(state.iterations() * 10'000);
  state.SetLabel("items = source lines");
}
BENCHMARK(BM_Assemble10kLines)->Unit(benchmark::kMillisecond);

void BM_Assemble10kLinesAndLink(benchmark::State& state) {
  const std::string source = generated_source(10'000);
  for (auto _ : state) {
    Object object = assemble_text(source, "library.s");
    benchmark::DoNotOptimize(link(std::vector<const Object*>{&object}, LinkOptions{}));
  }
}
BENCHMARK(BM_Assemble10kLinesAndLink)->Unit(benchmark::kMillisecond);

// Per-tile links against a library linked once: all 1,472 tiles.
void BM_LinkEveryTileAgainstTheLibrary(benchmark::State& state) {
  Object library_object = assemble_text(generated_source(3'000), "library.s");
  LinkOptions library_options;
  library_options.placements = {{".text", 0x60000, std::nullopt, 0}, {".data", 0x80000, std::nullopt, 0}};
  const Image library = link(std::vector<const Object*>{&library_object}, library_options);
  std::vector<Object> supervisors;
  for (int tile = 0; tile < 1472; ++tile)
    supervisors.push_back(assemble_text(fmt::format(
        ".text\n.global main\nmain:\n setzi $m6, kernel{0}\n setzi $m7, args\n run $m6, $m7\n wsync\n sync\n halt\n"
        ".section .args, \"i\"\nargs: .word {1}, {2}, table\n", tile % 20, tile, tile * 2), "tile.s"));
  LinkOptions options;
  options.entry = "main";
  const Image* images[] = {&library};
  for (auto _ : state)
    for (const Object& supervisor : supervisors)
      benchmark::DoNotOptimize(link(std::vector<const Object*>{&supervisor}, options, images));
  state.SetItemsProcessed(state.iterations() * 1472);
  state.SetLabel("items = tile links");
}
BENCHMARK(BM_LinkEveryTileAgainstTheLibrary)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
