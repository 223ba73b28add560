// The flags that choose a graph: a built-in workload with its options, or a
// graph file. Shared by every command that takes a graph (graph show,
// reference, and the compile/run commands).
//
// Numbers are read as text and parsed here, so that a bad value gives one
// line naming the flag ("--batch 0: must be an integer >= 1") and exit 2.
#pragma once

#include "graph/graph.h"
#include "graph/tensor.h"
#include "graph/workloads.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tilec::cli {

struct WorkloadFlags {
  std::string workload;
  std::string batch = "1";
  std::string blocks = "1";
  std::string precision = "fp8";
  std::string fp8_scale = "auto";
  bool bias = false;
  std::string tokens, width, hidden;
  std::string layers;
  bool no_head = false;
  std::string seed = "0";
  std::vector<std::string> shapes;  // --shape NAME=d0,d1,... for an .onnx model
};

// A graph file: the JSON format, or an ONNX model (".onnx") imported with
// the --shape flags, whose initializers are its parameters' data.
struct GraphFile {
  graph::Graph graph;
  graph::TensorMap parameters;  // an ONNX model's; empty for JSON
};
GraphFile load_graph_file(const std::string& path, const WorkloadFlags& flags);

// Adds --workload and its options to `command`.
void add_workload_flags(CLI::App& command, WorkloadFlags& flags);

// The workload's options, checked; BadInput naming the flag otherwise.
graph::MlpOptions workload_options(const WorkloadFlags& flags);
std::uint64_t workload_seed(const WorkloadFlags& flags);

// BadInput when a workload option was given to `command` without --workload
// (--seed is not one: it also generates a graph file's data).
void reject_workload_options_without_workload(const CLI::App& command, const WorkloadFlags& flags);

// The inputs and parameters a graph needs, by name and type.
std::map<std::string, graph::TensorType> source_types(const graph::Graph& graph);

// A graph file's inputs and parameters: read from `inputs_dir`, or
// generated (graph::generate_data) when --seed N was given instead.
// BadInput for neither or both (checked alone by the first, before any
// file is read).
void check_graph_file_data_flags(const CLI::App& command, const std::string& inputs_dir);
// The tensors `known` holds (an ONNX model's parameters) are taken from it.
graph::TensorMap graph_file_data(const CLI::App& command, const graph::Graph& graph, const std::string& inputs_dir,
                                 const WorkloadFlags& flags, const graph::TensorMap& known = {});

// "siglip-mlp fp8 batch 1 blocks 1", "siglip-vit fp8 batch 1 layers 27": what
// a workload run is called in reports.
std::string workload_title(const WorkloadFlags& flags, const graph::MlpOptions& options);

}  // namespace tilec::cli
