// The host reference interpreter: runs any valid graph on the host and gives
// the numbers every device run is compared with.
//
// Each op computes in FP32 with the kernels of numerics/reference_ops.h and
// rounds its result once to the result's storage type (round_to_storage), as
// the device stores it. Inside an op nothing else is rounded: attention keeps
// its scores and probabilities in FP32. A repeat runs its body `count` times
// (iteration i sees slice i of each sequence operand); it is never unrolled,
// and a source only repeats read as a sequence (a tower's stacked weights)
// is decoded slice by slice as iterations need it, not whole.
// Results are bit-identical for any host thread count.
#pragma once

#include "graph/graph.h"
#include "graph/summation_order.h"
#include "graph/tensor.h"

#include <map>
#include <string>
#include <vector>

namespace tilec::graph {

struct ReferenceResult {
  TensorMap outputs;  // by output name
  // With keep_intermediates: every op result by value name; a repeat body's
  // values as "REPEAT[i].NAME" (iteration i, nested repeats chained).
  TensorMap intermediates;
};

// `tensors` holds every input and parameter by name with exactly its graph
// type (others are ignored); BadInput names a missing or mistyped one.
// gemm_k_parts > 1 sums every gemm op's K in that many parts
// (reference::gemm): the same graph in another valid summation order.
ReferenceResult run_reference(const Graph& graph, const TensorMap& tensors,
                              bool keep_intermediates = false, int gemm_k_parts = 1);

// The plan-order reference: the same interpreter with each op that `order`
// names summed in that order (graph/summation_order.h), every other op as
// above. A device that runs the plan computes exactly these bits. BadInput
// when the order names an op the graph has no gemm of.
ReferenceResult run_reference(const Graph& graph, const TensorMap& tensors, const SummationOrder& order,
                              bool keep_intermediates = false);

// The tensor `name` of `values`, which must have `expected`'s type:
// BadInput naming the output otherwise (or when it is missing).
const Tensor& output_like(const TensorMap& values, const std::string& name, const Tensor& expected);

// The output elements of `values` whose stored bits differ from
// `reference`'s (every output of `reference` must be in `values` with the
// same type; output_like). A NaN against a NaN counts as equal, whatever
// their codes; +0 against -0 differs. 0: bit for bit the same.
std::int64_t differing_elements(const TensorMap& values, const TensorMap& reference);

// The exact reference: the same graph in FP64 from the same stored inputs
// and parameters, with nothing rounded to a storage type (a cast passes its
// value through): the numbers the graph would give if its types lost
// nothing. The distance of the reference from it is what the graph's own
// precision costs; the device's, what precision and device cost together.
using ExactOutputs = std::map<std::string, std::vector<double>>;
ExactOutputs run_exact_reference(const Graph& graph, const TensorMap& tensors);

}  // namespace tilec::graph
