// `tilec graph check FILE`, `tilec graph show FILE|--workload NAME`,
// `tilec graph write --workload NAME -o FILE [--params DIR]`,
// `tilec graph workloads`.
#include "cli/commands.h"
#include "support/number_text.h"
#include "cli/workload_flags.h"
#include "graph/cost.h"
#include "graph/json_format.h"
#include "graph/npy.h"
#include "graph/workloads.h"
#include "support/error.h"
#include "support/output_path.h"

#include <fmt/format.h>

#include <memory>

namespace tilec::cli {

namespace {

std::string plural(std::int64_t count, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

std::string op_notes(const graph::Graph& graph, const graph::Op& op) {
  using graph::OpKind;
  switch (op.kind) {
    case OpKind::Gemm:
      return op.transpose_a && op.transpose_b ? "transpose a, b"
             : op.transpose_a                 ? "transpose a"
             : op.transpose_b                 ? "transpose b"
                                              : "";
    case OpKind::Gelu: return op.approximation == graph::GeluApproximation::Tanh ? "tanh" : "erf";
    case OpKind::LayerNorm: return fmt::format("epsilon {}", op.epsilon);
    case OpKind::Softmax: return fmt::format("axis {}", op.axis);
    case OpKind::Attention: {
      // The default scale is 1/sqrt of each head's width, D / heads.
      const std::string heads = op.attention_heads > 1 ? fmt::format("{} heads, ", op.attention_heads) : "";
      if (op.attention_scale != 0.0f) return fmt::format("{}scale {}", heads, op.attention_scale);
      const std::int64_t width = graph.type(op.operands.at(0)).shape.back();
      return fmt::format("{}scale 1/sqrt({})", heads, width / op.attention_heads);
    }
    case OpKind::Patchify: return fmt::format("patch {}", op.patch);
    case OpKind::Reshape: return fmt::format("shape [{}]", fmt::join(op.target_shape, ","));
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
      return fmt::format("axes [{}]{}", fmt::join(op.axes, ","), op.keep_dims ? "" : ", dropped");
    case OpKind::Transpose: return fmt::format("permutation [{}]", fmt::join(op.permutation, ","));
    case OpKind::Concat: return fmt::format("axis {}", op.axis);
    case OpKind::Slice:
      return fmt::format("starts [{}], ends [{}], steps [{}]", fmt::join(op.starts, ","), fmt::join(op.ends, ","),
                         fmt::join(op.steps, ","));
    case OpKind::Gather: return fmt::format("axis {}, {} indices", op.axis, op.indices.size());
    case OpKind::Repeat:
      return fmt::format("x{} ({} carried, {} sequence, {} invariant)", op.count, op.signature.carried,
                         op.signature.sequence, op.signature.invariant);
    default: return "";
  }
}

struct Row {
  std::string name, kind, operands, result, macs, notes;
};

void collect_rows(const graph::Graph& graph, const std::string& indent, std::vector<Row>& rows) {
  for (const graph::Op& op : graph.ops) {
    std::vector<std::string> operands;
    for (graph::ValueId id : op.operands) operands.push_back(graph.value(id).name);
    std::vector<std::string> results;
    for (graph::ValueId id : op.results) results.push_back(graph::type_text(graph.type(id)));
    const std::int64_t macs = graph::op_macs(graph, op);
    rows.push_back({indent + op.name, std::string(graph::op_kind_name(op.kind)),
                    fmt::format("{}", fmt::join(operands, ", ")), fmt::format("{}", fmt::join(results, ", ")),
                    macs ? grouped(macs) : "", op_notes(graph, op)});
    if (op.kind == graph::OpKind::Repeat) collect_rows(*op.body, indent + "  ", rows);
  }
}

void print_graph(const graph::Graph& graph, const std::string& title) {
  std::vector<Row> rows{{"op", "kind", "operands", "result", "MACs", ""}};
  collect_rows(graph, "", rows);
  std::size_t widths[5] = {};
  for (const Row& row : rows) {
    const std::string* cells[5] = {&row.name, &row.kind, &row.operands, &row.result, &row.macs};
    for (std::size_t i = 0; i < 5; ++i) widths[i] = std::max(widths[i], cells[i]->size());
  }
  fmt::print("graph: {}\n", title);
  for (const Row& row : rows) {
    std::string line = fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {:>{}}  {}", row.name, widths[0], row.kind,
                                   widths[1], row.operands, widths[2], row.result, widths[3], row.macs,
                                   widths[4], row.notes);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  }
  for (const auto& [name, id] : graph.outputs)
    fmt::print("output: {} = {} {}\n", name, graph.value(id).name, graph::type_text(graph.type(id)));
  fmt::print("total: {} MACs; inputs {} bytes; parameters {} bytes\n", grouped(graph::graph_macs(graph)),
             grouped(graph::input_bytes(graph)), grouped(graph::parameter_bytes(graph)));
}

struct ShowFlags {
  std::string file;
  WorkloadFlags workload;
  bool json = false;
};

void show(const CLI::App& command, const ShowFlags& flags) {
  if (flags.file.empty() == flags.workload.workload.empty())
    throw_bad_input("graph show", "give a graph FILE or --workload NAME (one of them)");
  reject_workload_options_without_workload(command, flags.workload);
  graph::Graph graph;
  std::string title = flags.file;
  if (!flags.file.empty()) {
    graph = load_graph_file(flags.file, flags.workload).graph;
  } else {
    const graph::MlpOptions options = workload_options(flags.workload);
    graph = graph::build_workload(flags.workload.workload, options);
    title = workload_title(flags.workload, options);
  }
  if (flags.json)
    fmt::print("{}", graph::write_graph_json(graph));
  else
    print_graph(graph, title);
}

void check(const std::string& file) {
  const graph::Graph graph = graph::load_graph_file(file);
  std::int64_t ops = 0;
  for (const graph::Op& op : graph.ops)
    ops += op.kind != graph::OpKind::Input && op.kind != graph::OpKind::Parameter;
  fmt::print("ok: {}, {}, {}, {}; {} MACs\n", plural(ops, "op", "ops"),
             plural(static_cast<std::int64_t>(graph.inputs().size()), "input", "inputs"),
             plural(static_cast<std::int64_t>(graph.parameters().size()), "parameter", "parameters"),
             plural(static_cast<std::int64_t>(graph.outputs.size()), "output", "outputs"),
             grouped(graph::graph_macs(graph)));
}

struct WriteFlags {
  WorkloadFlags workload;
  std::string output;
  std::string params_dir;
};

// The sources of `kind` among `data`, for a tensor directory with their role.
graph::TensorMap sources_of(const graph::Graph& graph, graph::OpKind kind, graph::TensorMap& data) {
  graph::TensorMap tensors;
  for (const graph::Op& op : graph.ops)
    if (op.kind == kind) tensors.insert(data.extract(op.name));
  return tensors;
}

// A built-in workload as a graph file, and with --params its own data (its
// data rules, as `run --workload` draws it) as a tensor directory.
void write(const WriteFlags& flags) {
  if (flags.workload.workload.empty()) throw_bad_input("graph write", "needs --workload NAME");
  check_output_file("-o", flags.output);
  if (!flags.params_dir.empty()) check_output_folder("--params", flags.params_dir);
  const graph::MlpOptions options = workload_options(flags.workload);
  graph::Workload workload = graph::make_workload(flags.workload.workload, options);
  graph::save_graph_file(flags.output, workload.graph);
  if (!flags.params_dir.empty()) {
    graph::TensorMap data = graph::generate_data(workload.graph, options.seed, workload.data_rules);
    graph::write_tensor_dir(flags.params_dir, sources_of(workload.graph, graph::OpKind::Input, data),
                            graph::TensorRole::Input);
    graph::write_tensor_dir(flags.params_dir, sources_of(workload.graph, graph::OpKind::Parameter, data),
                            graph::TensorRole::Parameter);
  }
  const graph::Graph& graph = workload.graph;
  fmt::print("wrote {} -> {}: {}, {}{}\n", workload_title(flags.workload, options), flags.output,
             plural(static_cast<std::int64_t>(graph.inputs().size()), "input", "inputs"),
             plural(static_cast<std::int64_t>(graph.parameters().size()), "parameter", "parameters"),
             flags.params_dir.empty() ? ""
                                      : fmt::format(" ({} bytes of data in {})",
                                                    grouped(graph::input_bytes(graph) + graph::parameter_bytes(graph)),
                                                    flags.params_dir));
}

}  // namespace

void add_graph_commands(CLI::App& app) {
  CLI::App* graph = app.add_subcommand("graph", "Check, show and write graph files (docs/graph-format.md)");
  graph->require_subcommand(1);

  CLI::App* check_command = graph->add_subcommand(
      "check", "Read and validate a graph file; print \"ok: ...\" or the one-line error (exit 2)");
  auto check_file = std::make_shared<std::string>();
  check_command->add_option("FILE", *check_file, "The graph file (JSON)")->required();
  check_command->callback([check_file] { check(*check_file); });

  CLI::App* show_command = graph->add_subcommand(
      "show", "List a graph's ops with result types, MACs per op, and input/parameter bytes");
  auto show_flags = std::make_shared<ShowFlags>();
  show_command->add_option("FILE", show_flags->file, "A graph file (JSON), or give --workload");
  add_workload_flags(*show_command, show_flags->workload);
  show_command->add_flag("--json", show_flags->json, "Print the graph in the JSON graph format instead");
  show_command->callback([show_command, show_flags] { show(*show_command, *show_flags); });

  CLI::App* write_command = graph->add_subcommand(
      "write", "Write a built-in workload as a graph file to edit or run (and with --params its data)");
  auto write_flags = std::make_shared<WriteFlags>();
  add_workload_flags(*write_command, write_flags->workload);
  write_command->add_option("-o,--output", write_flags->output, "The graph file to write (JSON)")
      ->type_name("FILE")
      ->required();
  write_command
      ->add_option("--params", write_flags->params_dir,
                   "Write the workload's own data, inputs and parameters, as NAME.npy with manifest.json into DIR "
                   "(what `tilec run FILE --inputs DIR` reads)")
      ->type_name("DIR");
  write_command->callback([write_flags] { write(*write_flags); });

  CLI::App* list_command = graph->add_subcommand("workloads", "List the built-in workloads");
  list_command->callback([] {
    for (const graph::WorkloadInfo& info : graph::workloads()) fmt::print("{:<12} {}\n", info.name, info.summary);
  });
}

}  // namespace tilec::cli
