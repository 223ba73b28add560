// `tilec import`: an ONNX model as a tilec graph file (and its initializers
// as .npy files). `tilec onnx-test`: ONNX's backend node tests run on the
// host reference and, where the compiler plans them, on the simulator, with
// a pass/fail/unsupported table per op (docs/onnx.md).
#include "bench/run_case.h"
#include "bench/workload_data.h"
#include "cli/case_flags.h"
#include "cli/commands.h"
#include "graph/json_format.h"
#include "graph/npy.h"
#include "graph/reference.h"
#include "onnx/import.h"
#include "onnx/node_test.h"
#include "support/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>

namespace tilec::cli {

namespace {

struct ImportFlags {
  std::string model;
  std::string output;
  std::string params_dir;
  std::vector<std::string> shapes;
};

void import(const ImportFlags& flags) {
  onnx_import::ImportOptions options;
  for (const std::string& text : flags.shapes) {
    auto [name, shape] = onnx_import::parse_shape_override(text);
    if (!options.shapes.emplace(name, shape).second) throw_bad_input("--shape " + text, "names '{}' twice", name);
  }
  const onnx_import::ImportedModel model = onnx_import::import_model(flags.model, options);
  graph::save_graph_file(flags.output, model.graph);
  if (!flags.params_dir.empty()) graph::write_tensor_dir(flags.params_dir, model.parameters, graph::TensorRole::Parameter);
  std::size_t ops = 0;
  for (const graph::Op& op : model.graph.ops) ops += op.kind != graph::OpKind::Input && op.kind != graph::OpKind::Parameter;
  fmt::print("imported {} (opset {}): {} ops, {} inputs, {} parameters, {} outputs -> {}{}\n", flags.model, model.opset,
             ops, model.graph.inputs().size(), model.graph.parameters().size(), model.graph.outputs.size(), flags.output,
             flags.params_dir.empty() ? "" : ", parameters in " + flags.params_dir);
}

struct OnnxTestFlags {
  std::vector<std::string> folders;
  TargetFlags target;
  bool host_only = false;
  bool strict = false;
  bool planned = false;
  bool verbose = false;
  bool json = false;
};

enum class Verdict { Pass, Fail, Unsupported, NotPlanned };

struct TestResult {
  std::string name, op;
  Verdict host = Verdict::Unsupported;
  Verdict device = Verdict::Unsupported;
  std::string detail;  // why it failed or is unsupported
};

std::string verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::Pass: return "pass";
    case Verdict::Fail: return "fail";
    case Verdict::Unsupported: return "unsupported";
    case Verdict::NotPlanned: return "not planned";
  }
  return "?";
}

// Every output against ONNX's expected values: "" or the first mismatch.
std::string check_outputs(const graph::TensorMap& outputs, const onnx_import::NodeTestSet& set) {
  for (const auto& [name, expected] : set.expected) {
    auto found = outputs.find(name);
    if (found == outputs.end()) return fmt::format("output '{}' is missing", name);
    const std::string difference = onnx_import::compare_with_expected(found->second, expected);
    if (!difference.empty()) return fmt::format("output '{}': {}", name, difference);
  }
  return "";
}

void run_on_device(const onnx_import::NodeTest& test, const compiler::CompileOptions& options, TestResult& result) {
  result.device = Verdict::Pass;
  for (const onnx_import::NodeTestSet& set : test.sets) {
    graph::TensorMap data = set.inputs;
    for (const auto& [name, tensor] : set.model.parameters) data.insert_or_assign(name, tensor);
    bench::CaseRequest request;
    request.identity.name = test.name;
    request.graph = &set.model.graph;
    request.data = &data;
    request.compile = options;
    std::optional<bench::ReferenceOutputs> reference;
    request.reference = [&]() -> const bench::ReferenceOutputs& {
      if (!reference) reference = bench::compute_reference(set.model.graph, data);
      return *reference;
    };
    const bench::CaseOutcome outcome = bench::run_case(request);
    if (outcome.outputs.empty()) {
      result.device = outcome.error && outcome.error->kind() == ErrorKind::Failure && outcome.report.cycles == std::nullopt
                          ? Verdict::NotPlanned
                          : Verdict::Fail;
      if (result.device == Verdict::Fail || result.detail.empty())
        result.detail = outcome.error ? outcome.error->what() : outcome.report.status;
      return;
    }
    const std::string difference = check_outputs(outcome.outputs, set);
    if (!difference.empty()) {
      result.device = Verdict::Fail;
      result.detail = "device: " + difference;
      return;
    }
  }
}

TestResult run_test(const std::string& folder, const OnnxTestFlags& flags, const compiler::CompileOptions& options) {
  TestResult result;
  result.name = std::filesystem::path(folder).filename().string();
  try {
    result.op = onnx_import::tested_op(folder);
  } catch (const Error& error) {
    result.op = result.name;
  }
  onnx_import::NodeTest test;
  try {
    test = onnx_import::load_node_test(folder);
  } catch (const Error& error) {
    result.detail = error.what();
    return result;
  }
  result.host = Verdict::Pass;
  for (const onnx_import::NodeTestSet& set : test.sets) {
    graph::TensorMap data = set.inputs;
    for (const auto& [name, tensor] : set.model.parameters) data.insert_or_assign(name, tensor);
    std::string difference;
    try {
      difference = check_outputs(graph::run_reference(set.model.graph, data).outputs, set);
    } catch (const Error& error) {
      difference = error.what();
    }
    if (!difference.empty()) {
      result.host = Verdict::Fail;
      result.detail = "host: " + difference;
      return result;
    }
  }
  if (!flags.host_only) run_on_device(test, options, result);
  return result;
}

struct OpRow {
  int tests = 0, host_pass = 0, host_fail = 0, unsupported = 0, device_pass = 0, device_fail = 0, not_planned = 0;
};

void onnx_test(const OnnxTestFlags& flags) {
  compiler::CompileOptions options = compile_options(flags.target.target.empty() ? TargetFlags{"ipu21:16", flags.target.budget_kib} : flags.target);
  std::vector<TestResult> results;
  for (const std::string& folder : onnx_import::find_node_tests(flags.folders)) results.push_back(run_test(folder, flags, options));
  std::map<std::string, OpRow> rows;
  bool failed = false;
  for (const TestResult& result : results) {
    OpRow& row = rows[result.op];
    ++row.tests;
    row.host_pass += result.host == Verdict::Pass;
    row.host_fail += result.host == Verdict::Fail;
    row.unsupported += result.host == Verdict::Unsupported;
    if (result.host == Verdict::Pass && !flags.host_only) {
      row.device_pass += result.device == Verdict::Pass;
      row.device_fail += result.device == Verdict::Fail;
      row.not_planned += result.device == Verdict::NotPlanned;
    }
    failed = failed || result.host == Verdict::Fail || (result.host == Verdict::Pass && result.device == Verdict::Fail) ||
             (flags.strict && result.host == Verdict::Unsupported) ||
             (flags.planned && result.host == Verdict::Pass && result.device == Verdict::NotPlanned);
  }
  if (flags.json) {
    nlohmann::ordered_json tests = nlohmann::ordered_json::array();
    for (const TestResult& result : results)
      tests.push_back({{"test", result.name}, {"op", result.op}, {"host", verdict_name(result.host)},
                       {"device", flags.host_only || result.host != Verdict::Pass ? "" : verdict_name(result.device)},
                       {"detail", result.detail}});
    fmt::print("{}\n", tests.dump(1));
  } else {
    if (flags.verbose)
      for (const TestResult& result : results)
        fmt::print("{:<55} {:<12} {:<12} {}\n", result.name, verdict_name(result.host),
                   flags.host_only || result.host != Verdict::Pass ? "" : verdict_name(result.device), result.detail);
    fmt::print("{:<34} {:>5} | {:>9} {:>9} {:>11} | {:>11} {:>11} {:>11}\n", "op", "tests", "host pass", "host fail",
               "unsupported", "device pass", "device fail", "not planned");
    OpRow total;
    for (const auto& [op, row] : rows) {
      fmt::print("{:<34} {:>5} | {:>9} {:>9} {:>11} | {:>11} {:>11} {:>11}\n", op, row.tests, row.host_pass,
                 row.host_fail, row.unsupported, row.device_pass, row.device_fail, row.not_planned);
      total.tests += row.tests;
      total.host_pass += row.host_pass;
      total.host_fail += row.host_fail;
      total.unsupported += row.unsupported;
      total.device_pass += row.device_pass;
      total.device_fail += row.device_fail;
      total.not_planned += row.not_planned;
    }
    fmt::print("{:<34} {:>5} | {:>9} {:>9} {:>11} | {:>11} {:>11} {:>11}\n", "all", total.tests, total.host_pass,
               total.host_fail, total.unsupported, total.device_pass, total.device_fail, total.not_planned);
  }
  if (failed)
    throw_failure("onnx-test", "a test failed{}{} (run with --verbose for each test)", flags.strict ? " or is unsupported" : "",
                  flags.planned ? " or is not planned on the device" : "");
}

}  // namespace

void add_onnx_commands(CLI::App& app) {
  CLI::App* import_command = app.add_subcommand("import", "Import an ONNX model as a tilec graph file (docs/onnx.md)");
  auto import_flags = std::make_shared<ImportFlags>();
  import_command->add_option("MODEL", import_flags->model, "The ONNX model (.onnx)")->required();
  import_command->add_option("-o,--output", import_flags->output, "The graph file to write (JSON)")->required();
  import_command->add_option("--params", import_flags->params_dir,
                             "Write the parameters (initializers and folded constants) as NAME.npy with manifest.json into DIR")
      ->type_name("DIR");
  import_command->add_option("--shape", import_flags->shapes, "Fix input NAME's dynamic extents (repeatable)")
      ->type_name("NAME=d0,d1,...");
  import_command->callback([import_flags] { import(*import_flags); });

  CLI::App* test_command = app.add_subcommand(
      "onnx-test",
      "Run ONNX backend node tests (folders with model.onnx and test_data_set_N) on the host reference and the "
      "simulator; print a table per op (exit 1 when a test fails)");
  auto test_flags = std::make_shared<OnnxTestFlags>();
  test_command->add_option("DIR", test_flags->folders, "Test folders, or folders of them")->required();
  add_target_flags(*test_command, test_flags->target);
  test_command->add_flag("--host-only", test_flags->host_only, "Run the host reference only");
  test_command->add_flag("--strict", test_flags->strict, "Count unsupported tests as failures");
  test_command->add_flag("--planned", test_flags->planned, "Count tests the compiler does not plan as failures");
  test_command->add_flag("--verbose", test_flags->verbose, "Print each test's verdicts and why");
  test_command->add_flag("--json", test_flags->json, "Print one object per test instead of the table");
  test_command->callback([test_flags] { onnx_test(*test_flags); });
}

}  // namespace tilec::cli
