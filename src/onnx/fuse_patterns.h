// The patterns exporters write for ops tilec has whole, replaced by those
// ops on the importer's staged graph (after dead ops are gone):
// - layernorm: ReduceMean, Sub, Pow (or Mul by itself), ReduceMean, Add
//   epsilon, Sqrt, Div, Mul gamma, Add beta, over the last axis;
// - GELU, the erf form x * 0.5 * (1 + erf(x / sqrt 2)) and the tanh form
//   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), factors in any order;
// - multi-head attention: Reshape [B, S, H, D/H] and Transpose into heads,
//   MatMul with the keys transposed, a scale by Mul or Div (or none),
//   Softmax over the last axis, MatMul with the values, Transpose and
//   Reshape back to [B, S, D];
// - chains of reshapes and transposes that leave every element where it
//   was (a patch embedding's NCHW round trip), which become one reshape.
// Each pattern's inner values must have no use outside it; the replaced
// ops are left for the next dead-op sweep.
#pragma once

#include "onnx/staged_graph.h"

namespace tilec::onnx_import {

void fuse_patterns(StagedGraph& graph);

}  // namespace tilec::onnx_import
