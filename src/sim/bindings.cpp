// Host tensors in and out of tile memory: each binding's pieces say where
// each block of a tensor's elements lives (package/package.h, Piece).
#include "numerics/element_type.h"
#include "sim/device_state.h"
#include "support/error.h"

#include <fmt/ranges.h>

#include <cstring>

namespace tilec::sim {

namespace {

std::string type_description(const graph::TensorType& type) {
  std::string text(element_type_name(type.storage.element));
  if (is_fp8(type.storage.element) && type.storage.scale != 0)
    text += fmt::format("(s={})", type.storage.scale);
  return text + fmt::format("[{}]", fmt::join(type.shape, ","));
}

// Calls copy(host_byte_offset, device_address, bytes) for each run of
// elements of `piece` that is contiguous on both sides, in row-major order.
template <typename Copy>
void for_each_run(const package::Piece& piece, const graph::Shape& shape, std::uint32_t element,
                  Copy copy) {
  const std::size_t rank = shape.size();
  if (rank == 0) {
    copy(0, piece.address, element);
    return;
  }
  for (std::int64_t extent : piece.size)
    if (extent == 0) return;
  std::vector<std::int64_t> host_stride(rank, 1);
  for (std::size_t k = rank - 1; k > 0; --k) host_stride[k - 1] = host_stride[k] * shape[k];
  const bool contiguous = piece.strides.back() == 1;
  const std::int64_t inner = piece.size.back();
  std::vector<std::int64_t> index(rank, 0);  // relative to piece.start; the last axis stays 0
  for (;;) {
    std::int64_t host = 0, device = 0;
    for (std::size_t k = 0; k < rank; ++k) {
      host += (piece.start[k] + index[k]) * host_stride[k];
      device += index[k] * piece.strides[k];
    }
    if (contiguous) {
      copy(host * element, piece.address + static_cast<std::uint32_t>(device * element),
           static_cast<std::uint32_t>(inner * element));
    } else {
      for (std::int64_t i = 0; i < inner; ++i)
        copy((host + i) * element,
             piece.address + static_cast<std::uint32_t>((device + i * piece.strides.back()) * element),
             element);
    }
    // Next index of the outer axes, odometer style.
    std::size_t axis = rank - 1;
    while (axis > 0) {
      --axis;
      if (++index[axis] < piece.size[axis]) break;
      index[axis] = 0;
      if (axis == 0) return;
    }
    if (rank == 1) return;
  }
}

}  // namespace

void DeviceState::check_binding(const package::Binding& binding) const {
  std::string where = fmt::format("package: binding '{}'", binding.name);
  const graph::Shape& shape = binding.type.shape;
  const std::uint32_t element = element_bytes(binding.type.storage.element);
  for (const package::Piece& piece : binding.pieces) {
    if (piece.tile >= machine_.tiles)
      throw_bad_input(where, "piece on tile {}, outside 0..{}", piece.tile, machine_.tiles - 1);
    if (piece.start.size() != shape.size() || piece.size.size() != shape.size() ||
        piece.strides.size() != shape.size())
      throw_bad_input(where, "piece on tile {} does not have the tensor's rank {}", piece.tile, shape.size());
    // The piece's last byte: every index at its largest.
    std::int64_t last = 0;
    bool empty = false;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (piece.start[k] < 0 || piece.size[k] < 0 || piece.strides[k] < 0 ||
          piece.start[k] + piece.size[k] > shape[k])
        throw_bad_input(where, "piece on tile {} covers axis {} outside 0..{}", piece.tile, k, shape[k]);
      if (piece.size[k] == 0) empty = true;
      else last += (piece.size[k] - 1) * piece.strides[k];
    }
    if (empty) continue;
    std::int64_t end = piece.address + (last + 1) * element;
    if (piece.address < machine_.memory_begin || end > machine_.memory_end)
      throw_bad_input(where, "piece on tile {} ({:#x}..{:#x}) lies outside the tile's memory", piece.tile,
                      piece.address, end);
  }
}

const package::Binding& DeviceState::binding(const std::string& name, bool output) const {
  const package::Binding* found = nullptr;
  for (const package::Binding& binding : bindings_)
    if (binding.name == name && (!found || (binding.role == package::BindingRole::Output) == output)) found = &binding;
  if (found && (output || found->role != package::BindingRole::Output)) return *found;
  throw_bad_input("device", "the package has no {} named '{}'", output ? "binding" : "input or parameter", name);
}

void DeviceState::write(const std::string& name, const graph::Tensor& data) {
  const package::Binding& target = binding(name, false);
  if (data.type != target.type)
    throw_bad_input(fmt::format("binding '{}'", name), "is {}, but the tensor given is {}",
                    type_description(target.type), type_description(data.type));
  if (static_cast<std::int64_t>(data.bytes.size()) != data.type.bytes())
    throw_bad_input(fmt::format("binding '{}'", name), "the tensor has {} bytes, its type needs {}",
                    data.bytes.size(), data.type.bytes());
  const std::uint32_t element = element_bytes(target.type.storage.element);
  for (const package::Piece& piece : target.pieces) {
    TileState& tile = tiles_[piece.tile];
    for_each_run(piece, target.type.shape, element,
                 [&](std::int64_t host, std::uint32_t address, std::uint32_t bytes) {
                   std::memcpy(tile.at(address), data.bytes.data() + host, bytes);
                   tile.wrote(address, bytes);
                 });
  }
}

graph::Tensor DeviceState::read(const std::string& name) const {
  const package::Binding& source = binding(name, true);
  graph::Tensor tensor = graph::Tensor::zeros(source.type);
  const std::uint32_t element = element_bytes(source.type.storage.element);
  for (const package::Piece& piece : source.pieces) {
    const TileState& tile = tiles_[piece.tile];
    for_each_run(piece, source.type.shape, element,
                 [&](std::int64_t host, std::uint32_t address, std::uint32_t bytes) {
                   std::memcpy(tensor.bytes.data() + host,
                               tile.memory + (address - machine_.memory_begin), bytes);
                 });
  }
  return tensor;
}

std::uint32_t DeviceState::read_word(std::uint32_t tile, std::uint32_t address) const {
  if (tile >= tiles_.size())
    throw_bad_input(fmt::format("tile {}", tile), "the machine has tiles 0-{}", tiles_.size() - 1);
  if (address % 4 != 0 || !machine_.class_of(address, 4))
    throw_bad_input(fmt::format("tile {} address {:#x}", tile, address), "not a word-aligned address of the tile's memory");
  std::uint32_t word = 0;
  std::memcpy(&word, tiles_[tile].memory + (address - machine_.memory_begin), 4);
  return word;
}

}  // namespace tilec::sim
