// Writing and reading a full-chip package: 1,472 tiles, each with 16 KiB of
// code (half the tiles share one kernel image, the other half each have
// their own) and 4 KiB of arguments, and three bindings of about 1,500
// pieces each. Reading includes the full validation.
#include "isa/isa.h"
#include "package/package_file.h"
#include "package/validate.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

namespace {

using namespace tilec;
using namespace tilec::package;
using Bytes = std::vector<std::uint8_t>;

// Encoded bundles from a few instruction shapes with varied operands, so the
// code compresses about as well as compiled kernels would.
Bytes kernel_code(std::uint32_t bytes, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Bytes code;
  code.reserve(bytes);
  while (code.size() < bytes) {
    isa::Bundle bundle{isa::nop(), isa::fnop()};
    auto reg = [&] { return static_cast<std::int32_t>(random() % 15); };
    switch (random() % 4) {
      case 0: bundle.main = {isa::Opcode::Setzi, {reg(), static_cast<std::int32_t>(random() % 4096)}}; break;
      case 1: bundle.main = {isa::Opcode::Add, {reg(), reg(), reg()}}; break;
      case 2: bundle.flt = {isa::Opcode::F32v4add, {0, 4, 8}}; break;
      default: bundle.main = {isa::Opcode::Addi, {reg(), reg(), static_cast<std::int32_t>(random() % 64)}};
    }
    std::uint64_t bits = isa::encode_bundle(bundle);
    for (int b = 0; b < 8; ++b) code.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
  }
  return code;
}

// Argument blocks: tensor addresses and sizes for the tile's kernels.
Bytes kernel_arguments(std::uint32_t tile) {
  Bytes args(4096, 0);
  for (std::uint32_t i = 0; i + 8 <= args.size(); i += 8) {
    std::uint32_t address = 0x80000 + ((tile * 131 + i * 16) % 0x60000);
    std::uint32_t size = (i / 8) % 7 * 64;
    for (int b = 0; b < 4; ++b) {
      args[i + b] = static_cast<std::uint8_t>(address >> (8 * b));
      args[i + 4 + b] = static_cast<std::uint8_t>(size >> (8 * b));
    }
  }
  return args;
}

Package full_chip_package() {
  const MachineModel& model = ipu21();
  Package package = make_empty_package(model);
  package.compile_info = R"({"graph":"siglip-mlp","batch":1})";
  auto shared = std::make_shared<const Bytes>(kernel_code(16384, 0));
  for (std::uint32_t t = 0; t < model.tiles; ++t) {
    TileImage& tile = package.tiles[t];
    auto code = t % 2 == 0 ? shared : std::make_shared<const Bytes>(kernel_code(16384, t));
    tile.segments.push_back({".text", 0x4C000, code, true});
    tile.segments.push_back({".args", 0x50000, std::make_shared<const Bytes>(kernel_arguments(t)), false});
    tile.entry = 0x4C000;
    tile.symbols.push_back({"main", 0x4C000, 16384, SymbolKind::Function});
    tile.regions.push_back({"code", 0x4C000, 16384, RegionKind::Code});
    tile.regions.push_back({"args", 0x50000, 4096, RegionKind::Arguments});
    tile.peak_bytes = 16384 + 4096 + 512 + 2304 + 8192;
  }
  for (std::uint32_t g = 0; g < model.tiles / 64; ++g) {
    std::vector<std::uint32_t>& group = package.exchange_groups.emplace_back();
    for (std::uint32_t t = 0; t < 64; ++t) group.push_back(g * 64 + t);
  }

  // One row of the input and of the output per tile.
  Binding x{"x", BindingRole::Input, {{model.tiles, 256}, {ElementType::F16, 0}}, {}};
  Binding y{"y", BindingRole::Output, {{model.tiles, 1152}, {ElementType::F16, 0}}, {}};
  for (std::uint32_t t = 0; t < model.tiles; ++t) {
    x.pieces.push_back({t, 0x80000, {t, 0}, {1, 256}, {256, 1}});
    y.pieces.push_back({t, 0xA0000, {t, 0}, {1, 1152}, {1152, 1}});
  }
  // The weights in 48 x 31 blocks with rows padded to 144 bytes.
  Binding w{"w", BindingRole::Parameter, {{1152, 4304}, {ElementType::F143, -4}}, {}};
  for (std::int64_t band = 0; band < 48; ++band) {
    for (std::int64_t block = 0; block < 31; ++block) {
      auto k = static_cast<std::uint32_t>(band * 31 + block);
      std::int64_t columns = std::min<std::int64_t>(139, 4304 - block * 139);
      w.pieces.push_back({k % model.tiles, 0x90000 + (k / model.tiles) * 0x1000, {band * 24, block * 139},
                          {24, columns}, {144, 1}});
    }
  }
  package.bindings = {x, w, y};
  return package;
}

const Package& benchmark_package() {
  static const Package package = full_chip_package();
  return package;
}

void BM_EncodePackage(benchmark::State& state) {
  std::size_t bytes = 0;
  for (auto _ : state) bytes = encode_package(benchmark_package()).size();
  state.counters["file_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodePackage)->Unit(benchmark::kMillisecond);

void BM_DecodePackage(benchmark::State& state) {
  Bytes file = encode_package(benchmark_package());
  for (auto _ : state) benchmark::DoNotOptimize(decode_package(file, "bench.tpk"));
  state.counters["file_bytes"] = static_cast<double>(file.size());
}
BENCHMARK(BM_DecodePackage)->Unit(benchmark::kMillisecond);

void BM_ValidatePackage(benchmark::State& state) {
  for (auto _ : state) validate(benchmark_package());
}
BENCHMARK(BM_ValidatePackage)->Unit(benchmark::kMillisecond);

// The whole trip through a file, as the compiler and simulator make it.
void BM_WriteThenReadPackageFile(benchmark::State& state) {
  std::string path = (std::filesystem::temp_directory_path() / "tilec_package_bench.tpk").string();
  for (auto _ : state) {
    write_package(benchmark_package(), path);
    benchmark::DoNotOptimize(read_package(path));
  }
  state.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
}
BENCHMARK(BM_WriteThenReadPackageFile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
