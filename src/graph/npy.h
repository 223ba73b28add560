// Tensors as NumPy .npy files (format versions 1.0 and 2.0, little-endian,
// C order). F32 is stored as '<f4', F16 as '<f2', FP8 codes as '|u1'.
// NumPy's header holds no extra keys, so an FP8 tensor's format and scale
// are recorded in the directory manifest (manifest.json, see
// docs/numerics.md) or taken from the graph that names the tensor.
#pragma once

#include "graph/tensor.h"

#include <optional>
#include <string>

namespace tilec::graph {

void write_npy(const std::string& path, const Tensor& tensor);

// Reads a file into a tensor of type `expected`: float32/float16 data is
// rounded to the expected storage type; uint8 data is taken as codes of the
// expected FP8 type. Errors (BadInput) name the file and what is wrong: bad
// magic or header, unsupported dtype, Fortran order, shape different from
// the expected one, truncated data.
Tensor read_npy(const std::string& path, const TensorType& expected);

// Reads a file as it is: f32 or f16 data, or u8 read as FP8 of `fp8_type`.
Tensor read_npy_as_stored(const std::string& path, StorageType fp8_type = {ElementType::F143, 0});

enum class TensorRole : std::uint8_t { Input, Parameter, Output };

// A directory of tensors: NAME.npy per tensor plus manifest.json listing
// each tensor's name, file, role, element type, scale and shape.
void write_tensor_dir(const std::string& directory, const TensorMap& tensors, TensorRole role);
// Reads every tensor `types` names from the directory (manifest optional;
// when present, its element type and scale must agree with `types`).
TensorMap read_tensor_dir(const std::string& directory,
                          const std::map<std::string, TensorType>& types);

}  // namespace tilec::graph
