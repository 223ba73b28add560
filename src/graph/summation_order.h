// The order in which a compiled plan sums, for the plan-order reference.
//
// The host reference (graph/reference.h) defines every op's arithmetic in
// one order; a plan may sum in another where it spreads an op over tiles
// (a GEMM's K over several tiles, whose partial sums a combine kernel adds;
// a layernorm's or softmax's columns, whose statistics the row kernels
// combine), and where its kernels' arithmetic is not the reference's (the
// row kernels' divisions).
// A SummationOrder says, per graph op, the order the plan uses; the
// reference interpreter, given one, computes each such op in that order and
// every other op as usual, so a device that runs the plan equals it bit for
// bit. The compiler fills it from its plan (compiler/summation_order.h) and
// the package records it (docs/package-format.md).
#pragma once

#include "numerics/reference_ops.h"

#include <map>
#include <string>

namespace tilec::graph {

struct SummationOrder {
  // By gemm op name; an op inside a repeat body by its name in the body
  // (every iteration shares the body's order). A gemm not named here sums
  // K in one part.
  std::map<std::string, reference::KSplit> gemms;
  // By layernorm or softmax op name (named as gemms are): how the plan
  // computes its row statistics, whole rows included, since the device's
  // kernels divide as the reference does not. An op not named here is
  // computed as the reference computes it.
  std::map<std::string, reference::RowSplit> rows;
  // By attention op name: its key blocks, softmax chunks and the type of
  // its probabilities. An attention not named here is the reference's.
  std::map<std::string, reference::AttentionSplit> attentions;
  bool operator==(const SummationOrder&) const = default;
  bool empty() const { return gemms.empty() && rows.empty() && attentions.empty(); }
};

}  // namespace tilec::graph
