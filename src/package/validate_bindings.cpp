// Binding checks of validate(): fields, pieces, element coverage, and that
// no byte of tile memory is claimed twice.
#include "package/piece_layout.h"
#include "package/validate.h"

#include "support/error.h"
#include "support/parallel.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

namespace tilec::package::detail {

namespace {

bool known_element_type(ElementType type) { return element_type_name(type) != "?"; }

std::string index_text(std::int64_t flat, const graph::Shape& shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t k = shape.size(); k > 0; --k) {
    index[k - 1] = flat % shape[k - 1];
    flat /= shape[k - 1];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// Element counts in the tensor's own terms; the tensor must fit in the
// whole device's memory, which also keeps every product below overflow.
void check_type(const std::string& where, const Binding& binding, const MachineModel& model) {
  const StorageType& storage = binding.type.storage;
  if (static_cast<int>(binding.role) > static_cast<int>(BindingRole::Output))
    throw_bad_input(where, "unknown role {}", static_cast<int>(binding.role));
  if (!known_element_type(storage.element))
    throw_bad_input(where, "unknown element type {}", static_cast<int>(storage.element));
  if (!is_fp8(storage.element) && storage.scale != 0)
    throw_bad_input(where, "scale {} on {} (only FP8 types carry a scale)", storage.scale,
                    element_type_name(storage.element));
  if (storage.scale < kMinScale || storage.scale > kMaxScale)
    throw_bad_input(where, "scale {} is outside {}..{}", storage.scale, kMinScale, kMaxScale);

  const std::uint64_t device_bytes = std::uint64_t{model.tiles} * model.memory_bytes();
  const std::uint32_t element_size = element_bytes(storage.element);
  std::uint64_t bytes = element_size;
  for (std::size_t k = 0; k < binding.type.shape.size(); ++k) {
    std::int64_t extent = binding.type.shape[k];
    if (extent < 1)
      throw_bad_input(where, "axis {} has extent {} (extents must be positive)", k, extent);
    if (static_cast<std::uint64_t>(extent) > device_bytes / bytes)
      throw_bad_input(where, "tensor [{}] is larger than the device's {} bytes of memory",
                      fmt::join(binding.type.shape, ", "), device_bytes);
    bytes *= static_cast<std::uint64_t>(extent);
  }
  if (binding.pieces.empty()) throw_bad_input(where, "has no pieces");
}

void check_piece(const std::string& where, const Binding& binding, std::size_t p,
                 const MachineModel& model) {
  const Piece& piece = binding.pieces[p];
  const graph::Shape& shape = binding.type.shape;
  const std::size_t rank = shape.size();
  std::string place = fmt::format("{}: piece {}", where, p);
  if (piece.tile >= model.tiles)
    throw_bad_input(place, "tile {} does not exist ({} has {} tiles)", piece.tile, model.name,
                    model.tiles);
  if (piece.start.size() != rank || piece.size.size() != rank || piece.strides.size() != rank)
    throw_bad_input(place, "has {} start, {} size and {} stride values for a rank-{} tensor",
                    piece.start.size(), piece.size.size(), piece.strides.size(), rank);

  for (std::size_t k = 0; k < rank; ++k) {
    std::int64_t start = piece.start[k], size = piece.size[k];
    if (start < 0 || size < 1 || start > shape[k] || size > shape[k] - start)
      throw_bad_input(place, "axis {}: start {} size {} lies outside the tensor's extent {}", k,
                      start, size, shape[k]);
    if (size > 1 && (piece.strides[k] < 1 || piece.strides[k] > model.memory_bytes()))
      throw_bad_input(place, "axis {}: stride {} is not in 1..{}", k, piece.strides[k],
                      model.memory_bytes());
  }

  // From the smallest stride up, each must clear the whole extent of the
  // axes inside it, or two elements would share bytes.
  std::vector<std::size_t> axes;
  for (std::size_t k = 0; k < rank; ++k)
    if (piece.size[k] > 1) axes.push_back(k);
  std::stable_sort(axes.begin(), axes.end(), [&](std::size_t a, std::size_t b) {
    return piece.strides[a] < piece.strides[b];
  });
  std::int64_t span = 1;  // elements spanned by the axes so far
  for (std::size_t axis : axes) {
    if (piece.strides[axis] < span)
      throw_bad_input(place, "strides [{}] for sizes [{}] place two elements at one address",
                      fmt::join(piece.strides, ", "), fmt::join(piece.size, ", "));
    // Bounded: strides are checked above and sizes by the tensor, which fits the device.
    span += piece.strides[axis] * (piece.size[axis] - 1);
    if (span > model.memory_bytes())
      throw_bad_input(place, "spans {} elements, more than a tile's memory", span);
  }

  const std::uint64_t bytes = static_cast<std::uint64_t>(span) *
                              element_bytes(binding.type.storage.element);
  if (piece.address < model.memory_begin || piece.address > model.memory_end ||
      bytes > model.memory_end - piece.address)
    throw_bad_input(place, "bytes {:#x}..{:#x} on tile {} lie outside tile memory {:#x}..{:#x}",
                    piece.address, piece.address + bytes, piece.tile, model.memory_begin,
                    model.memory_end);
}

// Which pieces contain the element, for naming the culprits.
std::vector<std::size_t> pieces_holding(const Binding& binding, std::int64_t flat) {
  std::vector<std::size_t> holders;
  const graph::Shape& shape = binding.type.shape;
  for (std::size_t p = 0; p < binding.pieces.size(); ++p) {
    const Piece& piece = binding.pieces[p];
    std::int64_t rest = flat;
    bool inside = true;
    for (std::size_t k = shape.size(); k > 0 && inside; --k) {
      std::int64_t i = rest % shape[k - 1];
      rest /= shape[k - 1];
      inside = i >= piece.start[k - 1] && i < piece.start[k - 1] + piece.size[k - 1];
    }
    if (inside) holders.push_back(p);
  }
  return holders;
}

// Sets bits [begin, end); returns the first of them that was already set, or -1.
std::int64_t set_bits(std::vector<std::uint64_t>& bits, std::int64_t begin, std::int64_t end) {
  std::int64_t already = -1;
  for (std::int64_t i = begin; i < end;) {
    std::uint64_t& word = bits[static_cast<std::size_t>(i / 64)];
    std::int64_t low = i % 64;
    std::int64_t high = std::min<std::int64_t>(64, low + (end - i));
    std::uint64_t mask = (high == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << high) - 1) &
                         (~std::uint64_t{0} << low);
    if (already < 0 && (word & mask) != 0) already = i - low + __builtin_ctzll(word & mask);
    word |= mask;
    i += high - low;
  }
  return already;
}

// Bit per element, set row by row.
void check_coverage(const std::string& where, const Binding& binding) {
  const bool exactly_once = binding.role != BindingRole::Parameter;
  const std::int64_t elements = binding.type.elements();
  std::int64_t held = 0;
  for (const Piece& piece : binding.pieces) held += piece_elements(piece);
  if (held < elements)
    throw_bad_input(where, "pieces hold {} elements, fewer than the tensor's {}", held, elements);

  std::vector<std::uint64_t> bits(static_cast<std::size_t>((elements + 63) / 64), 0);
  const std::uint32_t element_size = element_bytes(binding.type.storage.element);
  // A parameter's replicas (every group's copy) cover what their first copy
  // does: mark each distinct piece once.
  std::set<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> marked;
  for (const Piece& piece : binding.pieces) {
    if (!exactly_once && !marked.emplace(piece.start, piece.size).second) continue;
    for_each_piece_row(piece, binding.type.shape, element_size, [&](const PieceRow& row) {
      std::int64_t already = set_bits(bits, row.flat_index, row.flat_index + row.count);
      if (already >= 0 && exactly_once)
        throw_bad_input(where, "element {} is in pieces {} (an {} holds each element once)",
                        index_text(already, binding.type.shape),
                        fmt::join(pieces_holding(binding, already), " and "),
                        binding_role_name(binding.role));
    });
  }
  for (std::size_t w = 0; w < bits.size(); ++w) {
    std::uint64_t expected = ~std::uint64_t{0};
    if (w + 1 == bits.size() && elements % 64 != 0)
      expected = (std::uint64_t{1} << (elements % 64)) - 1;
    if (bits[w] != expected) {
      std::uint64_t missing = ~bits[w] & expected;
      std::int64_t i = static_cast<std::int64_t>(w * 64) + __builtin_ctzll(missing);
      throw_bad_input(where, "element {} is in no piece", index_text(i, binding.type.shape));
    }
  }
}

// Bytes of one tile claimed by a segment or by a piece of a binding.
struct Claim {
  std::uint32_t begin;
  std::uint32_t end;
  std::string_view owner;    // segment or binding name
  std::size_t piece;         // kSegment for a segment
};
constexpr std::size_t kSegment = SIZE_MAX;

std::string claim_text(const Claim& claim) {
  if (claim.piece == kSegment)
    return fmt::format("segment '{}' ({:#x}..{:#x})", claim.owner, claim.begin, claim.end);
  return fmt::format("binding '{}' piece {} ({:#x}..{:#x})", claim.owner, claim.piece,
                     claim.begin, claim.end);
}

void check_memory_claims(const Package& package, const MachineModel& model) {
  // Each tile's pieces as (binding, piece), in binding then piece order.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> tile_pieces(model.tiles);
  std::vector<std::uint64_t> bound_bytes(model.tiles, 0);
  for (std::size_t b = 0; b < package.bindings.size(); ++b) {
    const Binding& binding = package.bindings[b];
    const std::uint32_t element_size = element_bytes(binding.type.storage.element);
    for (std::size_t p = 0; p < binding.pieces.size(); ++p) {
      const Piece& piece = binding.pieces[p];
      bound_bytes[piece.tile] += static_cast<std::uint64_t>(piece_elements(piece)) * element_size;
      tile_pieces[piece.tile].emplace_back(b, p);
    }
  }
  // More bound bytes than memory must overlap somewhere; say so before
  // listing runs that would not fit anyway.
  for (std::uint32_t t = 0; t < model.tiles; ++t)
    if (bound_bytes[t] > model.memory_bytes())
      throw_bad_input(fmt::format("tile {}", t),
                      "bindings hold {} bytes, more than the tile's {} bytes of memory",
                      bound_bytes[t], model.memory_bytes());
  // Tiles are checked at once (a large package has millions of runs); the
  // first tile with an overlap is reported.
  std::vector<std::string> overlaps(model.tiles);
  parallel_for(0, model.tiles, [&](std::size_t t) {
    std::vector<Claim> claims;
    for (const Segment& segment : package.tiles[t].segments)
      if (segment.size() > 0)
        claims.push_back({segment.address, segment.address + segment.size(), segment.name, kSegment});
    for (const auto& [b, p] : tile_pieces[t]) {
      const Binding& binding = package.bindings[b];
      for (const ByteRun& run : piece_memory_runs(binding.pieces[p], element_bytes(binding.type.storage.element)))
        claims.push_back({run.begin, run.end, binding.name, p});
    }
    std::sort(claims.begin(), claims.end(), [](const Claim& a, const Claim& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    for (std::size_t i = 1, furthest = 0; i < claims.size(); ++i) {
      if (claims[i].begin < claims[furthest].end) {
        overlaps[t] = fmt::format("{} overlaps {}", claim_text(claims[furthest]), claim_text(claims[i]));
        return;
      }
      if (claims[i].end > claims[furthest].end) furthest = i;
    }
  });
  for (std::uint32_t t = 0; t < model.tiles; ++t)
    if (!overlaps[t].empty()) throw_bad_input(fmt::format("tile {}", t), "{}", overlaps[t]);
}

}  // namespace

void validate_bindings(const Package& package, const MachineModel& model) {
  // Inputs and parameters are written by name, outputs read: a name is
  // used once in each.
  std::set<std::pair<bool, std::string_view>> names;
  for (std::size_t b = 0; b < package.bindings.size(); ++b) {
    const Binding& binding = package.bindings[b];
    if (binding.name.empty()) throw_bad_input(fmt::format("binding {}", b), "has no name");
    std::string where = fmt::format("binding '{}'", binding.name);
    if (!names.insert({binding.role == BindingRole::Output, binding.name}).second)
      throw_bad_input(where, "name is used twice");
    check_type(where, binding, model);
    for (std::size_t p = 0; p < binding.pieces.size(); ++p) check_piece(where, binding, p, model);
  }
  // Bindings are covered at once (a model's weights have hundreds of
  // millions of elements); the first binding that fails is reported.
  std::vector<std::optional<Error>> uncovered(package.bindings.size());
  parallel_for(0, package.bindings.size(), [&](std::size_t b) {
    try {
      check_coverage(fmt::format("binding '{}'", package.bindings[b].name), package.bindings[b]);
    } catch (const Error& error) {
      uncovered[b] = error;
    }
  });
  for (const std::optional<Error>& error : uncovered)
    if (error) throw *error;
  check_memory_claims(package, model);
}

}  // namespace tilec::package::detail
