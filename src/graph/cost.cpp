#include "graph/cost.h"

namespace tilec::graph {

namespace {

std::int64_t source_bytes(const Graph& graph, OpKind kind) {
  std::int64_t bytes = 0;
  for (const Op& op : graph.ops)
    if (op.kind == kind) bytes += graph.type(op.results.at(0)).bytes();
  return bytes;
}

}  // namespace

std::int64_t op_macs(const Graph& graph, const Op& op) {
  switch (op.kind) {
    case OpKind::Gemm: {
      // Result [..., M, N]; K from a's contracted axis.
      const Shape& a = graph.type(op.operands.at(0)).shape;
      const std::int64_t k = op.transpose_a ? a[a.size() - 2] : a.back();
      return graph.type(op.results.at(0)).elements() * k;
    }
    case OpKind::Attention: {
      // Result [..., S, E]: scores take S*T*D per batch element, the values S*T*E.
      const Shape& q = graph.type(op.operands.at(0)).shape;
      const Shape& k = graph.type(op.operands.at(1)).shape;
      const TensorType& result = graph.type(op.results.at(0));
      const std::int64_t s = q[q.size() - 2], d = q.back(), t = k[k.size() - 2];
      const std::int64_t e = result.shape.back();
      const std::int64_t batch = result.elements() / (s * e);
      return batch * s * t * (d + e);
    }
    case OpKind::Repeat: return op.count * graph_macs(*op.body);
    default: return 0;
  }
}

std::int64_t graph_macs(const Graph& graph) {
  std::int64_t macs = 0;
  for (const Op& op : graph.ops) macs += op_macs(graph, op);
  return macs;
}

std::int64_t input_bytes(const Graph& graph) { return source_bytes(graph, OpKind::Input); }

std::int64_t parameter_bytes(const Graph& graph) { return source_bytes(graph, OpKind::Parameter); }

}  // namespace tilec::graph
