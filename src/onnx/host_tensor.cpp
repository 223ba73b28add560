#include "onnx/host_tensor.h"

#include "graph/shape_inference.h"
#include "numerics/fp16.h"
#include "support/error.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace tilec::onnx_import {

namespace {

// Little-endian raw bytes as values of `T`.
template <typename T>
std::vector<double> raw_values(const std::string& raw) {
  std::vector<double> values(raw.size() / sizeof(T));
  for (std::size_t i = 0; i < values.size(); ++i) {
    T element;
    std::memcpy(&element, raw.data() + i * sizeof(T), sizeof(T));
    values[i] = static_cast<double>(element);
  }
  return values;
}

std::size_t element_bytes(std::int32_t data_type) {
  switch (static_cast<DataType>(data_type)) {
    case DataType::Float:
    case DataType::Int32: return 4;
    case DataType::Int64:
    case DataType::Double: return 8;
    case DataType::Float16: return 2;
    default: return 1;
  }
}

std::vector<double> decode_raw(std::int32_t data_type, const std::string& raw) {
  switch (static_cast<DataType>(data_type)) {
    case DataType::Float: return raw_values<float>(raw);
    case DataType::Double: return raw_values<double>(raw);
    case DataType::Int32: return raw_values<std::int32_t>(raw);
    case DataType::Int64: return raw_values<std::int64_t>(raw);
    case DataType::Uint8:
    case DataType::Bool: return raw_values<std::uint8_t>(raw);
    case DataType::Int8: return raw_values<std::int8_t>(raw);
    case DataType::Float16: {
      std::vector<double> values(raw.size() / 2);
      for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, raw.data() + 2 * i, 2);
        values[i] = half_to_float(bits);
      }
      return values;
    }
  }
  return {};
}

// The typed repeated fields: float_data, int32_data (also float16 bits,
// int8, uint8, bool), int64_data, double_data.
std::vector<double> decode_fields(const onnx::TensorProto& proto) {
  std::vector<double> values;
  switch (static_cast<DataType>(proto.data_type())) {
    case DataType::Float:
      for (float v : proto.float_data()) values.push_back(v);
      break;
    case DataType::Double:
      for (double v : proto.double_data()) values.push_back(v);
      break;
    case DataType::Int64:
      for (std::int64_t v : proto.int64_data()) values.push_back(static_cast<double>(v));
      break;
    case DataType::Float16:
      for (std::int32_t v : proto.int32_data()) values.push_back(half_to_float(static_cast<std::uint16_t>(v)));
      break;
    default:
      for (std::int32_t v : proto.int32_data()) values.push_back(v);
  }
  return values;
}

}  // namespace

bool is_float_type(std::int32_t data_type) {
  return data_type == static_cast<std::int32_t>(DataType::Float) ||
         data_type == static_cast<std::int32_t>(DataType::Float16) ||
         data_type == static_cast<std::int32_t>(DataType::Double);
}

std::string data_type_name(std::int32_t data_type) {
  switch (static_cast<DataType>(data_type)) {
    case DataType::Float: return "float";
    case DataType::Uint8: return "uint8";
    case DataType::Int8: return "int8";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::Bool: return "bool";
    case DataType::Float16: return "float16";
    case DataType::Double: return "double";
  }
  return fmt::format("type {}", data_type);
}

std::optional<StorageType> storage_of(std::int32_t data_type) {
  if (data_type == static_cast<std::int32_t>(DataType::Float)) return StorageType{ElementType::F32, 0};
  if (data_type == static_cast<std::int32_t>(DataType::Float16)) return StorageType{ElementType::F16, 0};
  return std::nullopt;
}

std::int64_t HostTensor::elements() const {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

std::vector<std::int64_t> HostTensor::integers() const {
  std::vector<std::int64_t> result;
  constexpr double kLimit = 9.2233720368547758e18;  // 2^63
  for (double v : values)
    result.push_back(std::isnan(v)  ? 0
                     : v >= kLimit    ? std::numeric_limits<std::int64_t>::max()
                     : v <= -kLimit ? std::numeric_limits<std::int64_t>::min()
                                    : static_cast<std::int64_t>(v));
  return result;
}

std::int64_t bounded_element_count(const graph::Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t extent : shape)
    count = extent != 0 && count > kLargestComputedConstant / extent ? kLargestComputedConstant + 1 : count * extent;
  return count;
}

std::optional<double> HostTensor::single_value() const {
  if (values.size() != 1) return std::nullopt;
  return values.front();
}

HostTensor float_tensor(graph::Shape shape, std::vector<double> values, std::int32_t data_type) {
  return HostTensor{data_type, std::move(shape), std::move(values)};
}

HostTensor integer_tensor(graph::Shape shape, const std::vector<std::int64_t>& values) {
  HostTensor tensor{static_cast<std::int32_t>(DataType::Int64), std::move(shape), {}};
  for (std::int64_t v : values) tensor.values.push_back(static_cast<double>(v));
  return tensor;
}

HostTensor read_tensor_proto(const onnx::TensorProto& proto, const std::string& where) {
  HostTensor tensor;
  tensor.data_type = proto.data_type();
  const std::string type = data_type_name(tensor.data_type);
  if (type.rfind("type ", 0) == 0) throw_bad_input(where, "has element {}, which tilec does not read", type);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    throw_bad_input(where, "keeps its data in an external file, which tilec does not read");
  for (std::int64_t extent : proto.dims()) {
    if (extent < 0) throw_bad_input(where, "has a negative extent {}", extent);
    tensor.shape.push_back(extent);
  }
  std::int64_t expected = 1;
  for (std::int64_t extent : tensor.shape)
    expected = extent != 0 && expected > graph::kLargestElementCount / extent ? graph::kLargestElementCount + 1
                                                                             : expected * extent;
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() % element_bytes(tensor.data_type) != 0 ||
        static_cast<std::int64_t>(proto.raw_data().size() / element_bytes(tensor.data_type)) != expected)
      throw_bad_input(where, "holds {} bytes of {} but its shape {} needs {} elements", proto.raw_data().size(), type,
                      graph::shape_text(tensor.shape), expected);
    tensor.values = decode_raw(tensor.data_type, proto.raw_data());
  } else {
    tensor.values = decode_fields(proto);
    if (static_cast<std::int64_t>(tensor.values.size()) != expected)
      throw_bad_input(where, "holds {} values of {} but its shape {} needs {}", tensor.values.size(), type,
                      graph::shape_text(tensor.shape), expected);
  }
  return tensor;
}

HostTensor read_tensor_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_bad_input(path, "cannot open the tensor file");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes.str())) throw_bad_input(path, "is not a serialized ONNX TensorProto");
  return read_tensor_proto(proto, path);
}

graph::Tensor to_graph_tensor(const HostTensor& tensor, StorageType storage) {
  std::vector<float> values(tensor.values.begin(), tensor.values.end());
  return graph::Tensor::from_floats({tensor.shape, storage}, values);
}

}  // namespace tilec::onnx_import
