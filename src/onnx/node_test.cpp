#include "onnx/node_test.h"

#include "graph/shape_inference.h"
#include "support/error.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace tilec::onnx_import {

namespace fs = std::filesystem;

namespace {

onnx::ModelProto parse_only(const std::string& path) {
  onnx::ModelProto model;
  if (!model.ParseFromString(read_file_bytes(path))) throw_bad_input(path, "is not an ONNX model");
  return model;
}

std::vector<std::string> graph_inputs(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& input : model.graph().input()) {
    bool initializer = false;
    for (const auto& tensor : model.graph().initializer()) initializer = initializer || tensor.name() == input.name();
    if (!initializer) names.push_back(input.name());
  }
  return names;
}

std::vector<fs::path> numbered_files(const fs::path& folder, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int k = 0; fs::exists(folder / fmt::format("{}_{}.pb", prefix, k)); ++k)
    files.push_back(folder / fmt::format("{}_{}.pb", prefix, k));
  return files;
}

}  // namespace

std::vector<std::string> find_node_tests(const std::vector<std::string>& paths) {
  std::vector<std::string> folders;
  for (const std::string& path : paths) {
    if (!fs::is_directory(path)) throw_bad_input(path, "is not a folder");
    if (fs::exists(fs::path(path) / "model.onnx")) {
      folders.push_back(path);
      continue;
    }
    for (const auto& entry : fs::directory_iterator(path))
      if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) folders.push_back(entry.path().string());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

std::string tested_op(const std::string& folder) {
  const onnx::ModelProto model = parse_only((fs::path(folder) / "model.onnx").string());
  if (model.graph().node_size() == 1) return model.graph().node(0).op_type();
  const std::string name = fs::path(folder).filename().string();
  const std::string suffix = "_expanded";
  if (name.size() > suffix.size() && name.ends_with(suffix)) {
    const fs::path sibling = fs::path(folder).parent_path() / name.substr(0, name.size() - suffix.size()) / "model.onnx";
    if (fs::exists(sibling)) {
      const onnx::ModelProto plain = parse_only(sibling.string());
      if (plain.graph().node_size() == 1) return plain.graph().node(0).op_type() + " (expanded)";
    }
  }
  return name;
}

NodeTest load_node_test(const std::string& folder) {
  NodeTest test;
  test.name = fs::path(folder).filename().string();
  test.op = tested_op(folder);
  const std::string model_path = (fs::path(folder) / "model.onnx").string();
  const std::string bytes = read_file_bytes(model_path);
  const std::vector<std::string> names = graph_inputs(parse_only(model_path));
  std::vector<fs::path> set_folders;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_")) set_folders.push_back(entry.path());
  std::sort(set_folders.begin(), set_folders.end());
  for (const fs::path& set_folder : set_folders) {
    const std::vector<fs::path> input_files = numbered_files(set_folder, "input");
    if (input_files.size() != names.size())
      throw_bad_input(set_folder.string(), "holds {} inputs but the model takes {}", input_files.size(), names.size());
    ImportOptions options;
    std::vector<std::pair<std::string, HostTensor>> float_inputs;
    for (std::size_t k = 0; k < names.size(); ++k) {
      HostTensor tensor = read_tensor_file(input_files[k].string());
      if (tensor.is_float()) float_inputs.emplace_back(names[k], std::move(tensor));
      else options.constant_inputs.emplace(names[k], std::move(tensor));
    }
    NodeTestSet set;
    set.model = import_model_bytes(bytes, model_path, options);
    for (auto& [onnx_name, tensor] : float_inputs)
      for (const auto& [input, graph_name] : set.model.inputs)
        if (input == onnx_name) {
          const graph::Op* op = nullptr;
          for (const graph::Op& candidate : set.model.graph.ops)
            if (candidate.name == graph_name) op = &candidate;
          TILEC_CHECK(op, "input '{}' is not in the imported graph", graph_name);
          set.inputs.emplace(graph_name, to_graph_tensor(tensor, set.model.graph.type(op->results[0]).storage));
        }
    const std::vector<fs::path> output_files = numbered_files(set_folder, "output");
    if (output_files.size() != set.model.outputs.size())
      throw_bad_input(set_folder.string(), "holds {} outputs but the model gives {}", output_files.size(),
                      set.model.outputs.size());
    for (std::size_t k = 0; k < output_files.size(); ++k) {
      HostTensor tensor = read_tensor_file(output_files[k].string());
      if (!tensor.is_float())
        throw_bad_input(output_files[k].string(), "is {}; tilec computes float values", data_type_name(tensor.data_type));
      set.expected.emplace_back(set.model.outputs[k].second, std::move(tensor));
    }
    test.sets.push_back(std::move(set));
  }
  if (test.sets.empty()) throw_bad_input(folder, "holds no test_data_set_N folder");
  return test;
}

std::string compare_with_expected(const graph::Tensor& actual, const HostTensor& expected) {
  if (actual.type.shape != expected.shape)
    return fmt::format("shape {} where ONNX expects {}", graph::shape_text(actual.type.shape),
                       graph::shape_text(expected.shape));
  const std::vector<float> values = actual.to_floats();
  std::int64_t wrong = 0;
  std::string first;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double a = values[i], e = expected.values[i];
    const bool same = (std::isnan(a) && std::isnan(e)) || a == e ||
                      std::abs(a - e) <= kNodeTestAbsolute + kNodeTestRelative * std::abs(e);
    if (same) continue;
    if (wrong++ == 0) first = fmt::format("element {} is {} where ONNX expects {}", i, a, e);
  }
  return wrong == 0 ? "" : fmt::format("{} of {} elements beyond tolerance; {}", wrong, values.size(), first);
}

}  // namespace tilec::onnx_import
