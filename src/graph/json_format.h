// The JSON graph format ("tilec-graph", version 1), documented with a full
// example and every op's fields in docs/graph-format.md.
//
// Reading validates everything: a syntax error is reported as
// "FILE:LINE:COLUMN: message"; anything else as "FILE: op 'NAME': problem"
// (unknown op or field, missing field, wrong field type, unknown value name,
// shape mismatch...). Writing produces the canonical text: load(write(g)) == g
// for any valid graph, and write(load(text)) is a fixed point.
#pragma once

#include "graph/graph.h"

#include <string>
#include <string_view>

namespace tilec::graph {

// `source` names the text in error messages (a file name).
Graph read_graph_json(std::string_view text, const std::string& source = "<graph>");
Graph load_graph_file(const std::string& path);

std::string write_graph_json(const Graph& graph);
void save_graph_file(const std::string& path, const Graph& graph);

}  // namespace tilec::graph
