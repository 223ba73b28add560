// ONNX's backend node tests (Debian's libonnx-testdata): a folder holding
// model.onnx and test_data_set_N/ with input_K.pb and output_K.pb. Loading
// one imports its model (its integer inputs fixed as constants, as a
// Reshape's shape must be) and pairs the data with the graph's names;
// `compare` applies the backend tests' tolerance.
#pragma once

#include "onnx/import.h"

#include <optional>
#include <string>
#include <vector>

namespace tilec::onnx_import {

// ONNX's backend-test tolerance for float outputs.
constexpr double kNodeTestRelative = 1e-3;
constexpr double kNodeTestAbsolute = 1e-7;

struct NodeTestSet {
  ImportedModel model;           // imported with this set's integer inputs
  graph::TensorMap inputs;       // by graph input name
  std::vector<std::pair<std::string, HostTensor>> expected;  // by graph output name, in order
};

struct NodeTest {
  std::string name;     // the folder's name ("test_gemm_alpha")
  std::string op;       // the op it tests ("Gemm", "LayerNormalization (expanded)")
  std::vector<NodeTestSet> sets;
};

// Folders holding model.onnx among `paths` and their subfolders, sorted.
std::vector<std::string> find_node_tests(const std::vector<std::string>& paths);

// The op a test folder tests, from its model (and, for an expanded
// function, its unexpanded sibling's).
std::string tested_op(const std::string& folder);

// BadInput (the importer's, or a data file's) when the test cannot be
// imported.
NodeTest load_node_test(const std::string& folder);

// "" when every element of `actual` is within atol + rtol |expected| of
// `expected` (NaN matching NaN) and the shapes agree; else why not.
std::string compare_with_expected(const graph::Tensor& actual, const HostTensor& expected);

}  // namespace tilec::onnx_import
