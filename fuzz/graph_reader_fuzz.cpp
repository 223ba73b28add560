// The graph reader: any text is a graph or a one-line BadInput. A graph it
// reads writes back to text that reads as the same graph.
#include "fuzz_target.h"

#include "graph/builder.h"
#include "graph/equality.h"
#include "graph/json_format.h"
#include "graph/workloads.h"
#include "support/error.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tilec;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  graph::Graph graph;
  try {
    graph = graph::read_graph_json(text, "<fuzz>");
  } catch (const Error&) {
    return 0;
  }
  const std::string written = graph::write_graph_json(graph);
  graph::Graph again;
  try {
    again = graph::read_graph_json(written, "<written>");
  } catch (const Error& error) {
    fuzz::property_failed(std::string("a graph read from text writes text it cannot read: ") + error.what());
  }
  if (const std::string difference = graph::first_difference(graph, again); !difference.empty())
    fuzz::property_failed("a graph written and read back differs: " + difference);
  return 0;
}

namespace tilec::fuzz {

std::vector<Input> seeds() {
  std::vector<Input> inputs;
  graph::MlpOptions small;
  small.fp8_scale = -4;  // no data needed to choose the scales
  for (graph::Precision precision : {graph::Precision::Fp8, graph::Precision::Fp16}) {
    small.precision = precision;
    small.fp8_scale = precision == graph::Precision::Fp8 ? std::optional<int>(-4) : std::nullopt;
    for (std::int64_t blocks : {1, 2}) {
      small.blocks = blocks;
      small.bias = blocks == 2;
      inputs.push_back(bytes_of(graph::write_graph_json(graph::build_workload("mlp", small))));
    }
  }
  // Every op kind the format knows.
  const StorageType f16{ElementType::F16, 0};
  graph::GraphBuilder b;
  graph::ValueId x = b.input("x", {{2, 16, 32}, f16});
  graph::ValueId gamma = b.parameter("gamma", {{32}, f16});
  graph::ValueId beta = b.parameter("beta", {{32}, f16});
  graph::ValueId w = b.parameter("W", {{32, 32}, {ElementType::F143, -3}});
  graph::ValueId h = b.layernorm("ln", x, gamma, beta, 1e-5f, f16);
  h = b.attention("att", h, h, h, 0.0f, f16, 2);
  h = b.softmax("sm", h, -1, f16);
  h = b.cast("narrow", h, {ElementType::F152, -2});
  h = b.gemm("mm", h, w, f16, false, true);
  h = b.gelu("act", h, graph::GeluApproximation::Erf, f16);
  b.output("y", b.add("res", h, x));
  inputs.push_back(bytes_of(graph::write_graph_json(b.finish())));
  return inputs;
}

std::vector<std::string> dictionary() {
  return {"\"format\"", "\"tilec-graph\"", "\"version\"", "\"inputs\"", "\"parameters\"", "\"ops\"",
          "\"outputs\"", "\"name\"", "\"type\"", "\"scale\"", "\"shape\"", "\"op\"", "\"gemm\"", "\"repeat\"",
          "\"attention\"", "\"heads\"", "\"count\"", "\"carried\"", "\"sequence\"", "\"invariant\"", "\"body\"",
          "\"f143\"", "\"e5m2\"", "\"f32\"", "[]", "{}", "-1", "0", "1099511627776", "1e308", "// ", "/*"};
}

}  // namespace tilec::fuzz
