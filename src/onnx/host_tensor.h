// Tensors as the importer holds them while it reads a model: ONNX
// initializers, Constant nodes, and the values it folds at import time
// (shapes, indices, scalars). Every element is kept as a double, which holds
// every float, float16 and 32-bit integer exactly and 64-bit integers up to
// 2^53 (beyond, as ONNX's "to the end" INT64_MAX, they saturate when read
// back as integers).
#pragma once

#include "graph/graph.h"
#include "graph/tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class TensorProto;
}

namespace tilec::onnx_import {

// ONNX's TensorProto.DataType codes that the importer reads.
enum class DataType : std::int32_t {
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Int32 = 6,
  Int64 = 7,
  Bool = 9,
  Float16 = 10,
  Double = 11,
};

bool is_float_type(std::int32_t data_type);
// "float", "int64", ..., or "type 14" for one the importer does not read.
std::string data_type_name(std::int32_t data_type);
// The storage of a float or float16 tensor; nullopt for any other type.
std::optional<StorageType> storage_of(std::int32_t data_type);

// The most elements of a constant the importer computes itself (a
// ConstantOfShape, a fold that broadcasts): 2^24, 128 MiB as doubles, which
// holds the masks and position tables models build at import.
constexpr std::int64_t kLargestComputedConstant = std::int64_t{1} << 24;

// The elements of `shape`, saturating just above kLargestComputedConstant.
std::int64_t bounded_element_count(const graph::Shape& shape);

struct HostTensor {
  std::int32_t data_type = static_cast<std::int32_t>(DataType::Float);
  graph::Shape shape;
  std::vector<double> values;  // row-major

  std::int64_t elements() const;
  bool is_float() const { return is_float_type(data_type); }
  // The values as integers (saturating beyond int64's range; NaN, a float
  // cast to an integer, which ONNX leaves undefined, as 0).
  std::vector<std::int64_t> integers() const;
  // A scalar or one-element tensor's value.
  std::optional<double> single_value() const;
};

HostTensor float_tensor(graph::Shape shape, std::vector<double> values,
                        std::int32_t data_type = static_cast<std::int32_t>(DataType::Float));
HostTensor integer_tensor(graph::Shape shape, const std::vector<std::int64_t>& values);

// A TensorProto's data (raw_data or the typed fields), checked against its
// dims: BadInput at `where` ("initializer 'W'") for a wrong element count,
// external data, or a type the importer does not read.
HostTensor read_tensor_proto(const onnx::TensorProto& proto, const std::string& where);
// A serialized TensorProto file (a backend test's input_0.pb).
HostTensor read_tensor_file(const std::string& path);

// The tensor stored as `storage` (rounded to it), for the graph layer.
graph::Tensor to_graph_tensor(const HostTensor& tensor, StorageType storage);

}  // namespace tilec::onnx_import
