// Small graphs shared by the graph layer's tests.
#pragma once

#include "graph/builder.h"

namespace tilec::graph::testing_graphs {

constexpr StorageType kF32{ElementType::F32, 0};
constexpr StorageType kF16{ElementType::F16, 0};

// A graph with every op kind, transposes, renamed repeat arguments and a
// repeat with two carried values.
inline Graph every_op_graph() {
  GraphBuilder b;
  ValueId x = b.input("x", {{2, 4, 8}, kF16});
  ValueId k = b.input("k", {{2, 5, 8}, kF32});
  ValueId w = b.parameter("w", {{8, 8}, {ElementType::F143, -3}});
  ValueId gamma = b.parameter("gamma", {{8}, kF32});
  ValueId beta = b.parameter("beta", {{8}, kF32});
  ValueId stacked = b.parameter("stacked", {{3, 8, 8}, {ElementType::E4M3, 0}});
  ValueId g = b.gemm("g", x, w, kF32, false, true);
  ValueId a = b.add("a", g, gamma);
  ValueId ln = b.layernorm("ln", a, gamma, beta, 1e-5f);
  ValueId sm = b.softmax("sm", ln, 1, kF16);
  ValueId at = b.attention("at", sm, k, k, 0.3f, std::nullopt, 2);
  ValueId ge = b.gelu("ge", at, GeluApproximation::Erf);
  ValueId c = b.cast("c", ge, {ElementType::F152, 2});
  ValueId patches = b.patchify("patches", x, 2);
  ValueId flat = b.reshape("flat", patches, {4, -1}, kF32);
  ValueId product = b.binary(OpKind::Mul, "product", ln, a);
  ValueId difference = b.binary(OpKind::Sub, "difference", product, gamma);
  ValueId quotient = b.binary(OpKind::Div, "quotient", difference, a, kF16);
  ValueId power = b.binary(OpKind::Pow, "power", quotient, quotient);
  ValueId root = b.unary(OpKind::Sqrt, "root", power);
  ValueId curve = b.unary(OpKind::Tanh, "curve", b.unary(OpKind::Erf, "erf", root));
  ValueId gate = b.unary(OpKind::Sigmoid, "gate", b.unary(OpKind::Relu, "relu", b.unary(OpKind::Exp, "exp", curve)));
  ValueId mean = b.reduce(OpKind::ReduceMean, "mean", gate, {-1});
  ValueId total = b.reduce(OpKind::ReduceSum, "total", mean, {0, 2}, false);
  ValueId peak = b.reduce(OpKind::ReduceMax, "peak", gate, {1});
  ValueId turned = b.transpose("turned", peak, {2, 0, 1});
  ValueId joined = b.concat("joined", {turned, turned}, -1);
  ValueId part = b.slice("part", joined, {7, 0, 1}, {-1, 2, 2}, {-2, 1, 1});
  ValueId picked = b.gather("picked", part, 0, {3, 0, 0}, {3});
  ValueId first = b.gather("first", total, 0, {0}, {});
  std::vector<ValueId> loop = b.repeat(
      "loop", 3,
      {.carried = {ge, a}, .sequence = {stacked}, .invariant = {gamma},
       .argument_names = {"h", "a", "w_i", "gamma"}},
      [](GraphBuilder& body, const std::vector<ValueId>& args) {
        ValueId h = body.gemm("mm", args[0], args[2], kF32, false, false);
        ValueId sum = body.add("sum", h, args[3]);
        return std::vector<ValueId>{body.cast("back", sum, kF16), args[1]};
      });
  b.output("y", loop[0]);
  b.output("a_final", loop[1]);
  b.output("c", c);
  b.output("flat", flat);
  b.output("picked", picked);
  b.output("first", first);
  return b.finish();
}

}  // namespace tilec::graph::testing_graphs
