// The rules every op obeys: which operands it takes, what shapes they may
// have, and the shapes of its results. Defined once, here: GraphBuilder uses
// them to construct graphs and validate() to check graphs read from files.
//
// Errors are BadInput with the place "op 'NAME'" and a message naming the
// operands and both shapes, e.g. "operand 'b' has shape [1000,4304] but
// operand 'a' needs K = 1152".
#pragma once

#include "graph/graph.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::graph {

// "[1,729,1152]".
std::string shape_text(const Shape& shape);

// FP8 scales beyond this magnitude are rejected: they only arise from typos,
// and keep every scaled value well inside FP32's range.
constexpr int kLargestFp8Scale = 64;
// Values beyond this many elements are rejected (keeps byte counts in range).
constexpr std::int64_t kLargestElementCount = std::int64_t{1} << 40;

// Checks a type anyone may write: extents >= 1, element count within limits,
// scale 0 for f32/f16 and within +-kLargestFp8Scale for FP8. `what` names the
// thing typed ("input 'x'", "result") and starts the message.
void check_type(const std::string& where, const std::string& what, const TensorType& type);

// The operand names of an op kind, in operand order ("a", "b" for gemm);
// empty for input, parameter and repeat (whose operands are its arguments).
std::span<const std::string_view> operand_roles(OpKind kind);

// Checks the operands' count and shapes and the op's attributes; returns the
// shapes of the op's results. A repeat's body must be present with its
// arguments and outputs typed (its own ops are validate()'s business).
std::vector<Shape> infer_result_shapes(const Op& op, std::span<const TensorType> operands);

// NumPy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace tilec::graph
