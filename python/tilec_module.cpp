// The Python module `tilec` (docs/python.md): graphs from JSON, ONNX or the
// built-in workloads, compiled into packages and run on the simulator with
// NumPy arrays in and out. It mirrors the CLI: the same loaders, the same
// compiler and the same case runner (bench/run_case.h), so a run's report
// has the keys of `tilec run --json`. tilec::Error becomes tilec.Error
// carrying the one-line message.
#include "bench/case_report.h"
#include "bench/run_case.h"
#include "bench/workload_data.h"
#include "compiler/compile.h"
#include "graph/json_format.h"
#include "graph/reference.h"
#include "graph/workloads.h"
#include "onnx/import.h"
#include "package/package_file.h"
#include "support/error.h"
#include "target/machine.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <cstring>
#include <memory>

namespace py = pybind11;
using namespace tilec;

namespace {

// A graph and the data it brings (a workload's, an ONNX model's initializers).
struct PyGraph {
  graph::Graph graph;
  graph::TensorMap data;
  std::string title;
  // A workload's case identity (batch, precision, blocks or layers and
  // head), as `tilec run --workload` reports it; a loaded file has none.
  std::optional<bench::CaseReport> identity;
};

struct PyPackage {
  std::shared_ptr<const PyGraph> graph;
  compiler::CompileOptions options;
  compiler::CompileResult result;
};

std::string dtype_text(const py::array& array) { return py::str(array.dtype()).cast<std::string>(); }

// A NumPy array as the graph's tensor `name` of `type`: float32/float16
// values rounded to the storage type, or uint8 codes of an FP8 type.
graph::Tensor to_tensor(const std::string& name, const py::handle& object, const graph::TensorType& type) {
  const std::string where = fmt::format("tensor '{}'", name);
  if (!py::isinstance<py::array>(object)) throw_bad_input(where, "must be a NumPy array");
  py::array array = py::reinterpret_borrow<py::array>(object);
  graph::Shape shape(array.shape(), array.shape() + array.ndim());
  if (shape != type.shape)
    throw_bad_input(where, "has shape [{}] but the graph needs [{}]", fmt::join(shape, ","), fmt::join(type.shape, ","));
  const std::string dtype = dtype_text(array);
  if (dtype == "uint8") {
    if (!is_fp8(type.storage.element))
      throw_bad_input(where, "is uint8 codes but the graph stores it as {}", graph::type_text(type));
    py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> codes(array);
    graph::Tensor tensor{type, std::vector<std::uint8_t>(codes.data(), codes.data() + codes.size())};
    return tensor;
  }
  if (dtype != "float32" && dtype != "float16" && dtype != "float64")
    throw_bad_input(where, "has dtype {}; give float32 or float16 values (or uint8 codes of an FP8 tensor)", dtype);
  py::array_t<float, py::array::c_style | py::array::forcecast> values(array);
  return graph::Tensor::from_floats(type, std::span<const float>(values.data(), static_cast<std::size_t>(values.size())));
}

py::array to_array(const graph::Tensor& tensor, bool fp8_codes) {
  std::vector<py::ssize_t> shape(tensor.type.shape.begin(), tensor.type.shape.end());
  if (fp8_codes && is_fp8(tensor.type.storage.element)) {
    py::array_t<std::uint8_t> codes(shape);
    std::memcpy(codes.mutable_data(), tensor.bytes.data(), tensor.bytes.size());
    return codes;
  }
  const std::vector<float> values = tensor.to_floats();
  py::array_t<float> array(shape);
  std::memcpy(array.mutable_data(), values.data(), values.size() * sizeof(float));
  return array;
}

// `value` as a dict of name -> array, or a one-line error naming `what`.
py::dict as_dict(const py::object& value, const char* what) {
  if (!py::isinstance<py::dict>(value)) {
    const std::string type = py::str(value.get_type().attr("__name__"));
    throw_bad_input(what, "must be a dict of name -> NumPy array, not {}", type);
  }
  return value.cast<py::dict>();
}

// The graph's inputs from `inputs`, its parameters from `params` or the
// graph's own data; every tensor named must be the graph's.
graph::TensorMap gather_data(const PyGraph& graph, const py::object& inputs, const py::object& params) {
  std::map<std::string, graph::TensorType> types;
  for (const graph::Op* op : graph.graph.inputs()) types.emplace(op->name, graph.graph.type(op->results[0]));
  std::map<std::string, graph::TensorType> parameter_types;
  for (const graph::Op* op : graph.graph.parameters()) parameter_types.emplace(op->name, graph.graph.type(op->results[0]));
  graph::TensorMap data;
  for (const auto& [key, value] : as_dict(inputs, "inputs")) {
    const std::string name = py::str(key);
    auto found = types.find(name);
    if (found == types.end()) throw_bad_input(fmt::format("input '{}'", name), "the graph has no such input");
    data.insert_or_assign(name, to_tensor(name, value, found->second));
  }
  for (const auto& [name, type] : types)
    if (!data.contains(name)) {
      auto own = graph.data.find(name);
      if (own == graph.data.end()) throw_bad_input(fmt::format("input '{}'", name), "no array given for it");
      data.insert_or_assign(name, own->second);
    }
  if (!params.is_none())
    for (const auto& [key, value] : as_dict(params, "params")) {
      const std::string name = py::str(key);
      auto found = parameter_types.find(name);
      if (found == parameter_types.end()) throw_bad_input(fmt::format("parameter '{}'", name), "the graph has no such parameter");
      data.insert_or_assign(name, to_tensor(name, value, found->second));
    }
  for (const auto& [name, type] : parameter_types)
    if (!data.contains(name)) {
      auto own = graph.data.find(name);
      if (own == graph.data.end()) throw_bad_input(fmt::format("parameter '{}'", name), "no array given for it");
      data.insert_or_assign(name, own->second);
    }
  return data;
}

py::dict to_dict(const graph::TensorMap& tensors, bool fp8_codes) {
  py::dict dict;
  for (const auto& [name, tensor] : tensors) dict[py::str(name)] = to_array(tensor, fp8_codes);
  return dict;
}

bool codes_requested(const std::string& fp8) {
  if (fp8 != "float32" && fp8 != "codes") throw_bad_input("fp8", "'{}' must be 'float32' or 'codes'", fp8);
  return fp8 == "codes";
}

std::shared_ptr<PyGraph> load(const std::string& path, const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  auto loaded = std::make_shared<PyGraph>();
  loaded->title = path;
  if (onnx_import::is_onnx_path(path)) {
    onnx_import::ImportOptions options;
    for (const auto& [name, shape] : shapes) options.shapes.emplace(name, shape);
    onnx_import::ImportedModel model = onnx_import::import_model(path, options);
    loaded->graph = std::move(model.graph);
    loaded->data = std::move(model.parameters);
  } else {
    if (!shapes.empty()) throw_bad_input("shapes", "apply to an .onnx model, not {}", path);
    loaded->graph = graph::load_graph_file(path);
  }
  return loaded;
}

std::shared_ptr<PyGraph> workload(const std::string& name, std::int64_t batch, const std::string& precision,
                                  std::int64_t blocks, bool bias, std::int64_t seed, std::optional<std::int64_t> tokens,
                                  std::optional<std::int64_t> width, std::optional<std::int64_t> hidden,
                                  std::optional<std::int64_t> layers, bool head) {
  if (seed < 0) throw_bad_input(fmt::format("seed {}", seed), "must be >= 0");
  graph::MlpOptions options;
  options.layers = layers;
  options.head = head;
  options.tokens = tokens;
  options.width = width;
  options.hidden = hidden;
  options.batch = batch;
  options.blocks = blocks;
  options.bias = bias;
  options.seed = static_cast<std::uint64_t>(seed);
  const std::optional<graph::Precision> parsed = graph::parse_precision(precision);
  if (!parsed) throw_bad_input(fmt::format("precision '{}'", precision), "must be fp8, fp16 or fp32");
  options.precision = *parsed;
  if (batch < 1 || blocks < 1) throw_bad_input("workload", "batch and blocks must be >= 1");
  graph::Workload built = graph::make_workload(name, options);
  auto loaded = std::make_shared<PyGraph>();
  loaded->title = name;
  loaded->identity = bench::workload_case(name, options, 0);
  loaded->identity->workload = bench::workload_label(name, options);
  loaded->data = graph::generate_data(built.graph, options.seed, built.data_rules);
  loaded->graph = std::move(built.graph);
  return loaded;
}

compiler::CompileOptions compile_options(const std::string& target, std::int64_t budget_kib, bool fp16_partials) {
  compiler::CompileOptions options;
  options.machine = machine_by_name(target);
  const std::int64_t tile_kib = options.machine.memory_bytes() / 1024;
  if (budget_kib < 0 || budget_kib > tile_kib)
    throw_bad_input(fmt::format("budget_kib {}", budget_kib), "must be from 0 (the whole tile) to the tile's {} KiB",
                    tile_kib);
  options.budget_bytes = static_cast<std::uint32_t>(budget_kib * 1024);
  options.fp16_partials_anywhere = fp16_partials;
  return options;
}

py::tuple run(const PyPackage& package, const py::object& inputs, const py::object& params, const std::string& fp8) {
  const bool codes = codes_requested(fp8);
  const graph::TensorMap data = gather_data(*package.graph, inputs, params);
  bench::CaseRequest request;
  request.identity.workload = package.graph->title;
  if (package.graph->identity) request.identity = *package.graph->identity;
  request.identity.target = package.options.machine.name;
  request.identity.budget_kib = package.options.budget_bytes / 1024;
  request.identity.name = bench::name_with_options(
      package.graph->identity ? bench::case_name(request.identity) : package.graph->title,
      package.options.fp16_partials_anywhere);
  request.graph = &package.graph->graph;
  request.data = &data;
  request.compile = package.options;
  request.package = &package.result.package;
  std::optional<bench::ReferenceOutputs> reference;
  request.reference = [&]() -> const bench::ReferenceOutputs& {
    if (!reference) reference = bench::compute_reference(package.graph->graph, data);
    return *reference;
  };
  bench::CaseOutcome outcome;
  {
    py::gil_scoped_release release;
    outcome = bench::run_case(request);
  }
  if (outcome.error) throw *outcome.error;
  const py::object json = py::module_::import("json");
  py::object report = json.attr("loads")(bench::case_json(outcome.report).dump());
  return py::make_tuple(to_dict(outcome.outputs, codes), report);
}

}  // namespace

PYBIND11_MODULE(tilec, m) {
  m.doc() = "tilec: compile graphs onto a simulated tile processor, with NumPy arrays in and out";
  static py::exception<Error> error_type(m, "Error");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const Error& error) {
      error_type(error.what());
    }
  });

  py::class_<PyGraph, std::shared_ptr<PyGraph>>(m, "Graph", "A graph and the data it brings")
      .def_property_readonly("inputs",
                             [](const PyGraph& g) {
                               py::dict inputs;
                               for (const graph::Op* op : g.graph.inputs())
                                 inputs[py::str(op->name)] = graph::type_text(g.graph.type(op->results[0]));
                               return inputs;
                             })
      .def_property_readonly("parameters",
                             [](const PyGraph& g) {
                               py::dict parameters;
                               for (const graph::Op* op : g.graph.parameters())
                                 parameters[py::str(op->name)] = graph::type_text(g.graph.type(op->results[0]));
                               return parameters;
                             })
      .def_property_readonly("outputs",
                             [](const PyGraph& g) {
                               py::list outputs;
                               for (const auto& [name, id] : g.graph.outputs) outputs.append(name);
                               return outputs;
                             })
      .def("json", [](const PyGraph& g) { return graph::write_graph_json(g.graph); }, "The graph file's canonical text")
      .def("params", [](const PyGraph& g, const std::string& fp8) { return to_dict(g.data, codes_requested(fp8)); },
           py::arg("fp8") = "float32", "The data the graph brings (its parameters, a workload's inputs too)")
      .def(
          "compile",
          [](const std::shared_ptr<PyGraph>& g, const std::string& target, std::int64_t budget_kib,
             bool fp16_partials) {
            auto package = std::make_shared<PyPackage>();
            package->graph = g;
            package->options = compile_options(target, budget_kib, fp16_partials);
            py::gil_scoped_release release;
            package->result = compiler::compile(g->graph, package->options);
            return package;
          },
          py::arg("target") = "ipu21", py::arg("budget_kib") = 0, py::arg("fp16_partials") = false,
          "Compile for a target ('ipu21', 'ipu21:64') within a per-tile budget (0 = the whole tile); "
          "fp16_partials sends every FP16 GEMM result's partial sums as FP16 (docs/numerics.md)");

  py::class_<PyPackage, std::shared_ptr<PyPackage>>(m, "Package", "A compiled graph")
      .def_property_readonly("plan", [](const PyPackage& p) { return p.result.plan; })
      .def_property_readonly("estimated_cycles", [](const PyPackage& p) { return p.result.estimated_cycles; })
      .def_property_readonly("search_estimated_cycles",
                             [](const PyPackage& p) { return p.result.search_estimated_cycles; })
      .def_property_readonly("peak_tile_bytes", [](const PyPackage& p) { return p.result.peak_bytes; })
      .def("save", [](const PyPackage& p, const std::string& path) { package::write_package(p.result.package, path); },
           py::arg("path"), "Write the package (.tpk)")
      .def("run", &run, py::arg("inputs"), py::arg("params") = py::none(), py::arg("fp8") = "float32",
           "Simulate on `inputs` (name -> array); returns (outputs, report) with the keys of `tilec run --json`");

  m.def("load", &load, py::arg("path"), py::arg("shapes") = std::map<std::string, std::vector<std::int64_t>>{},
        "A graph from a .json graph file or an .onnx model (shapes: input name -> extents for dynamic axes)");
  m.def("workload", &workload, py::arg("name"), py::arg("batch") = 1, py::arg("precision") = "fp8",
        py::arg("blocks") = 1, py::arg("bias") = false, py::arg("seed") = 0, py::arg("tokens") = py::none(),
        py::arg("width") = py::none(), py::arg("hidden") = py::none(), py::arg("layers") = py::none(),
        py::arg("head") = true,
        "A built-in workload ('siglip-mlp', 'mlp', 'siglip-vit', 'vit', ...) with its generated data; "
        "layers and head for the towers");
  m.def(
      "reference",
      [](const PyGraph& g, const py::object& inputs, const py::object& params, const std::string& fp8) {
        const bool codes = codes_requested(fp8);
        const graph::TensorMap data = gather_data(g, inputs, params);
        graph::ReferenceResult result;
        {
          py::gil_scoped_release release;
          result = graph::run_reference(g.graph, data);
        }
        return to_dict(result.outputs, codes);
      },
      py::arg("graph"), py::arg("inputs") = py::dict(), py::arg("params") = py::none(), py::arg("fp8") = "float32",
      "The host reference's outputs (name -> array)");
}
