// The ViT encoder tower workloads: `siglip-vit` (SigLIP So400m/14 at 384 px,
// ../shared/siglip-vit.md) and `vit` (the same graph at small sizes).
//
// image [b, H, H, C] -> patchify p -> [b, T, p*p*C] -> patch GEMM + bias
// -> + position [T, W] -> `layers` encoder layers as one repeat -> post-
// layernorm -> (MAP head: a probe attends over the tokens, then an MLP with
// a residual) -> embedding [b, W], or the tokens [b, T, W] without the head.
// docs/graph-format.md lists every op, tensor, type and data rule.
#pragma once

#include "graph/workloads.h"

#include <cstdint>

namespace tilec::graph {

struct VitDimensions {
  std::int64_t image = 384;  // height and width of the input image
  std::int64_t channels = 3;
  std::int64_t patch = 14;   // side of the square patches: (image / patch)^2 tokens
  std::int64_t width = 1152;
  std::int64_t hidden = 4304;  // the MLPs' hidden width
  std::int64_t heads = 16;
  std::int64_t layers = 27;
};

// SigLIP So400m/14 at 384 px, and the default sizes of `vit` (16 tokens).
constexpr VitDimensions kSiglipVit{};
constexpr VitDimensions kSmallVit{
    .image = 8, .channels = 3, .patch = 2, .width = 16, .hidden = 32, .heads = 2, .layers = 2};

// The whole tower, or one encoder layer alone: input x [batch, T, width]
// (T = (image / patch)^2 tokens), the layer's parameters unstacked (no
// leading layer axis), output y; the same ops and names as the repeat body.
enum class VitPart : std::uint8_t { Tower, EncoderLayer };

struct VitOptions {
  VitDimensions dimensions{};
  std::int64_t batch = 1;
  Precision precision = Precision::Fp8;
  bool head = true;
  // The data the FP8 scales are chosen for (generate_data's seed).
  std::uint64_t seed = 0;
  // EncoderLayer ignores `layers` and `head`.
  VitPart part = VitPart::Tower;
};

// The data: the image N(0, kImageSigma^2) (an encoder layer's x N(0, 1));
// every GEMM weight N(0, 1/K) for its K rows (fan-in); layernorm gains
// N(1, kSmallSigma^2); layernorm shifts, biases, the position embedding and
// the probe N(0, kSmallSigma^2).
constexpr float kImageSigma = 0.5f;
constexpr float kSmallSigma = 0.02f;
constexpr float kLayerNormEpsilon = 1e-6f;

// At fp8 the patches are cast to F143 with this scale before the patch
// GEMM: it holds |v| <= 3.75, 7.5 sigma of the generated image, and real
// pixels normalised to [-1, 1] with room to spare.
constexpr int kImageFp8Scale = -6;

// BadInput (naming the option) for dimensions that do not fit together.
Workload vit_workload(const VitOptions& options);

// The FP8 scale of a cast whose input never exceeds `bound` in magnitude:
// automatic_fp8_scale of bound x 9/8, the 1/8 covering the roundings the
// bound leaves out (see cast_bounds in vit_workload.cpp).
int bounded_fp8_scale(double bound);

}  // namespace tilec::graph
