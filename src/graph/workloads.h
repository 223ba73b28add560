// Built-in workloads and their data.
//
// `siglip-mlp` is the MLP block of SigLIP So400m/14 at 384 px, as
// ../shared/workload.md defines it: x [batch, 729, 1152] (input),
// W1 [1152, 4304], W2 [4304, 1152] (parameters), h = gelu_tanh(x W1),
// y = h W2 (output). `mlp` is the same graph with dimensions of your choice
// (small by default), for tests and quick runs. `siglip-vit` is the whole
// SigLIP So400m/14 vision tower (../shared/siglip-vit.md): patch embedding,
// encoder layers as one repeat, post-layernorm and the MAP head; `vit` is
// the same structure at small sizes. docs/graph-format.md shows the graphs
// each option gives and the data each tensor is drawn with.
#pragma once

#include "graph/graph.h"
#include "graph/tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::graph {

enum class Precision : std::uint8_t { Fp8, Fp16, Fp32 };

std::string_view precision_name(Precision precision);  // "fp8", "fp16", "fp32"
std::optional<Precision> parse_precision(std::string_view name);

// The scale of the FP8 copy of h that feeds the second GEMM: F143 with scale
// -4 holds |h| up to 15 (GELU of the first GEMM's results stays far below)
// and keeps values down to 2^-14 (subnormals) distinct from zero.
constexpr int kHiddenFp8Scale = -4;

// Standard deviations of the generated data (workload.md).
constexpr float kInputSigma = 0.25f;
constexpr float kParameterSigma = 0.0625f;

// The options of every built-in workload (the MLP ones and the ViT ones);
// each workload rejects those that do not apply to it.
struct MlpOptions {
  std::int64_t batch = 1;
  // N > 1 chains N blocks as one repeat op (x carried; W1, W2 and the biases
  // stacked as sequence parameters [N, ...]).
  std::int64_t blocks = 1;
  Precision precision = Precision::Fp8;
  // FP8 scale of x, W1 and W2; nullopt ("auto") picks, per tensor, the
  // smallest s with max|v| * 2^-s <= 240 over its generated data.
  std::optional<int> fp8_scale{};
  // Adds b1 [hidden] after the first GEMM and b2 [width] after the second
  // (stored f16, or f32 at fp32 precision).
  bool bias = false;
  // Unset: SigLIP's 729, 1152, 4304 (see build_workload for `mlp`).
  std::optional<std::int64_t> tokens{};
  std::optional<std::int64_t> width{};
  std::optional<std::int64_t> hidden{};
  // The data the automatic FP8 scales are chosen for (generate_data's seed).
  std::uint64_t seed = 0;
  // siglip-vit and vit only: encoder layers (unset: 27 and 2), and whether
  // the MAP head follows the post-layernorm.
  std::optional<std::int64_t> layers{};
  bool head = true;
};

// The MLP graph; BadInput (naming the option) for out-of-range options.
Graph mlp_graph(const MlpOptions& options);

struct WorkloadInfo {
  std::string name;
  std::string summary;
};
std::vector<WorkloadInfo> workloads();

// How generate_data draws one tensor: N(mean, sigma^2).
struct Distribution {
  float mean = 0.0f;
  float sigma = 1.0f;
  bool operator==(const Distribution&) const = default;
};
// By tensor name; a tensor not named draws with the defaults below.
using DataRules = std::map<std::string, Distribution, std::less<>>;

// A built-in workload: its graph and how its data is drawn.
struct Workload {
  Graph graph;
  DataRules data_rules;
};

// `siglip-mlp` and `siglip-vit` take no dimensions; `mlp` takes any, its
// unset ones being tokens 8, width 16, hidden 32; `vit` takes width and
// hidden (default 16 and 32; see graph/vit_workload.h). BadInput for an
// unknown name or an option the workload does not take.
Workload make_workload(std::string_view name, MlpOptions options);
Graph build_workload(std::string_view name, MlpOptions options);

// Every input and parameter of `graph`: graph::gaussian(seed, NAME, ...)
// with the tensor's rule from `rules`, or else sigma kInputSigma for inputs
// and kParameterSigma for parameters (mean 0), rounded to the tensor's
// storage type.
TensorMap generate_data(const Graph& graph, std::uint64_t seed, const DataRules& rules = {});

// The smallest scale s with max|v| * 2^-s <= largest(type) (0 for all-zero data).
int automatic_fp8_scale(std::span<const float> values, ElementType type = ElementType::F143);

}  // namespace tilec::graph
