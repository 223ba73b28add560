// The package reader, the validator and the device loader: any body is a
// package or a one-line BadInput, and a package it accepts loads, takes
// tensors, runs (briefly) and gives its outputs, or faults with one line.
//
// An input is 16 bytes of counts (tiles, contents, groups, bindings; u32
// each) and a package body; the target frames it into a file (header,
// checksum, compression), so mutations reach the body's structure instead
// of stopping at the checksum.
#include "fuzz_target.h"

#include "compiler/compile.h"
#include "graph/workloads.h"
#include "package/body_codec.h"
#include "package/package_file.h"
#include "sim/device.h"
#include "support/error.h"

#include <algorithm>
#include <cstring>

namespace {

constexpr std::size_t kCountBytes = 16;
// Keeps each run quick: the loader's checks do not depend on the tile count.
constexpr std::uint32_t kMostTilesRun = 64;

tilec::package::detail::EncodedBody body_of(const std::uint8_t* data, std::size_t size) {
  tilec::package::detail::EncodedBody body;
  std::uint32_t counts[4] = {};
  std::memcpy(counts, data, kCountBytes);
  body.counts = {counts[0], counts[1], counts[2], counts[3]};
  body.bytes.assign(data + kCountBytes, data + size);
  return body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tilec;
  if (size < kCountBytes) return 0;
  const std::vector<std::uint8_t> file = package::detail::frame_package_file(body_of(data, size));
  package::Package loaded;
  try {
    loaded = package::decode_package(file, "<fuzz>");
  } catch (const Error&) {
    return 0;
  }
  if (loaded.tiles.size() > kMostTilesRun) return 0;
  try {
    sim::Device device(loaded, machine_by_name(loaded.target));
    for (const package::Binding& binding : loaded.bindings)
      if (binding.role != package::BindingRole::Output) device.write(binding.name, graph::Tensor::zeros(binding.type));
    sim::SimOptions options;
    options.record_profile = false;
    options.watchdog_cycles = 20'000;
    options.max_cycles = 100'000;
    device.run(options);
    for (const package::Binding& binding : loaded.bindings)
      if (binding.role == package::BindingRole::Output) (void)device.read(binding.name);
  } catch (const Error&) {
  }
  return 0;
}

namespace tilec::fuzz {

namespace {

Input seed_of(const package::Package& package) {
  const package::detail::EncodedBody body = package::detail::encode_body(package);
  const std::uint32_t counts[4] = {body.counts.tiles, body.counts.contents, body.counts.groups, body.counts.bindings};
  Input input(kCountBytes + body.bytes.size());
  std::memcpy(input.data(), counts, kCountBytes);
  std::copy(body.bytes.begin(), body.bytes.end(), input.begin() + kCountBytes);
  return input;
}

}  // namespace

std::vector<Input> seeds() {
  std::vector<Input> inputs;
  graph::MlpOptions options;
  options.fp8_scale = -4;
  for (std::uint32_t tiles : {1u, 4u, 16u}) {
    compiler::CompileOptions compile;
    compile.machine = ipu21_cut(tiles);
    inputs.push_back(seed_of(compiler::compile(graph::build_workload("mlp", options), compile).package));
  }
  options.precision = graph::Precision::Fp32;
  options.fp8_scale.reset();
  options.blocks = 2;
  compiler::CompileOptions compile;
  compile.machine = ipu21_cut(8);
  inputs.push_back(seed_of(compiler::compile(graph::build_workload("mlp", options), compile).package));
  return inputs;
}

std::vector<std::string> dictionary() { return {}; }

}  // namespace tilec::fuzz
