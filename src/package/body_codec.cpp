#include "package/body_codec.h"

#include "package/byte_io.h"
#include "package/segment_contents.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <memory>

namespace tilec::package::detail {

namespace {

// Stored codes, by position: the code of a value is its index here.
constexpr std::array kSymbolKinds{SymbolKind::Function, SymbolKind::Kernel, SymbolKind::Data, SymbolKind::Op};
constexpr std::array kRegionKinds{RegionKind::Code, RegionKind::Arguments, RegionKind::Tensor,
                                  RegionKind::ExchangeBuffer, RegionKind::Scratch};
constexpr std::array kRoles{BindingRole::Input, BindingRole::Parameter, BindingRole::Output};
constexpr std::array kElementTypes{ElementType::F32,  ElementType::F16,  ElementType::F143,
                                   ElementType::F152, ElementType::E4M3, ElementType::E5M2};

// Smallest encodings, used to reject counts the remaining bytes cannot hold.
constexpr std::size_t kMinContentBytes = 4;
constexpr std::size_t kMinTileBytes = 4 + 4 + 4 + 4 + 4;
constexpr std::size_t kMinSegmentBytes = 4 + 4 + 1 + 4;
constexpr std::size_t kMinSymbolBytes = 4 + 4 + 4 + 1;
constexpr std::size_t kMinGroupBytes = 4;
constexpr std::size_t kMinBindingBytes = 4 + 1 + 1 + 4 + 4 + 4;

template <typename Enum, std::size_t N>
std::uint8_t code_of(const std::array<Enum, N>& codes, Enum value) {
  for (std::size_t i = 0; i < N; ++i)
    if (codes[i] == value) return static_cast<std::uint8_t>(i);
  TILEC_CHECK(false, "value {} has no package code", static_cast<int>(value));
}

template <typename Enum, std::size_t N>
Enum read_code(ByteReader& in, const std::array<Enum, N>& codes, std::string_view field) {
  std::size_t at = in.offset();
  std::uint8_t code = in.u8();
  if (code >= N) in.fail_at(at, "unknown {} code {}", field, code);
  return codes[code];
}

void write_vector(ByteWriter& out, const std::vector<std::int64_t>& values) {
  for (std::int64_t value : values) out.i64(value);
}

std::vector<std::int64_t> read_vector(ByteReader& in, std::uint32_t rank) {
  std::vector<std::int64_t> values(rank);
  for (std::int64_t& value : values) value = in.i64();
  return values;
}

template <typename Entry>  // Symbol or Region: the same four fields
void write_entries(ByteWriter& out, const std::vector<Entry>& entries, const auto& kinds) {
  out.count(entries.size(), "entry");
  for (const Entry& entry : entries) {
    out.string(entry.name);
    out.u32(entry.address);
    out.u32(entry.size);
    out.u8(code_of(kinds, entry.kind));
  }
}

template <typename Entry>
std::vector<Entry> read_entries(ByteReader& in, const auto& kinds, std::string_view what) {
  std::vector<Entry> entries(in.count(what, kMinSymbolBytes));
  for (Entry& entry : entries) {
    entry.name = in.string("name");
    entry.address = in.u32();
    entry.size = in.u32();
    entry.kind = read_code(in, kinds, what);
  }
  return entries;
}

void write_binding(ByteWriter& out, const Binding& binding) {
  out.string(binding.name);
  out.u8(code_of(kRoles, binding.role));
  out.u8(code_of(kElementTypes, binding.type.storage.element));
  out.i32(binding.type.storage.scale);
  out.count(binding.type.shape.size(), "rank");
  write_vector(out, binding.type.shape);
  out.count(binding.pieces.size(), "piece");
  for (const Piece& piece : binding.pieces) {
    out.u32(piece.tile);
    out.u32(piece.address);
    write_vector(out, piece.start);
    write_vector(out, piece.size);
    write_vector(out, piece.strides);
  }
}

Binding read_binding(ByteReader& in) {
  Binding binding;
  binding.name = in.string("binding name");
  binding.role = read_code(in, kRoles, "binding role");
  binding.type.storage.element = read_code(in, kElementTypes, "element type");
  binding.type.storage.scale = in.i32();
  std::uint32_t rank = in.count("rank", 8);
  binding.type.shape = read_vector(in, rank);
  std::size_t piece_bytes = 4 + 4 + 3 * 8 * static_cast<std::size_t>(rank);
  binding.pieces.resize(in.count("piece count", piece_bytes));
  for (Piece& piece : binding.pieces) {
    piece.tile = in.u32();
    piece.address = in.u32();
    piece.start = read_vector(in, rank);
    piece.size = read_vector(in, rank);
    piece.strides = read_vector(in, rank);
  }
  return binding;
}

constexpr std::uint8_t kHalfPartials = 1;
constexpr std::uint8_t kPasses = 2;
constexpr std::size_t kMinOrderBytes = 4 + 1 + 4 + 4;

// The summation order: per gemm, its name, flags (bit 0: FP16 partials;
// bit 1: added in passes, whose size follows), the K cuts, and the column
// ranges with their part orders.
void write_schedule(ByteWriter& out, const Schedule& schedule) {
  for (std::uint32_t field : {schedule.supersteps, schedule.chunks, schedule.groups, schedule.group_size})
    out.u32(field);
  out.string(schedule.repeat);
  out.i32(schedule.repeat_first);
  out.i32(schedule.repeat_last);
  out.u32(schedule.repeat_count);
}

Schedule read_schedule(ByteReader& in) {
  Schedule schedule;
  for (std::uint32_t* field : {&schedule.supersteps, &schedule.chunks, &schedule.groups, &schedule.group_size})
    *field = in.u32();
  schedule.repeat = in.string("schedule repeat");
  schedule.repeat_first = in.i32();
  schedule.repeat_last = in.i32();
  schedule.repeat_count = in.u32();
  return schedule;
}

void write_summation_order(ByteWriter& out, const graph::SummationOrder& order) {
  out.count(order.gemms.size(), "summation order");
  for (const auto& [name, split] : order.gemms) {
    out.string(name);
    out.u8((split.half_partials ? kHalfPartials : 0) | (split.pass_parts ? kPasses : 0));
    if (split.pass_parts) out.u8(static_cast<std::uint8_t>(split.pass_parts));
    out.count(split.cuts.size(), "K cut");
    write_vector(out, split.cuts);
    out.count(split.orders.size(), "column range");
    for (const reference::KSplit::Columns& range : split.orders) {
      out.i64(range.begin);
      out.i64(range.end);
      out.count(range.parts.size(), "part");
      for (int part : range.parts) out.u32(static_cast<std::uint32_t>(part));
    }
  }
}

constexpr std::size_t kMinRowOrderBytes = 4 + 4 + 1 + 4;

// Row orders and attention orders share one record: the op's name, a count
// in 1..64 (column ranges per part, or softmax chunks), one flag (the
// received slots are merged first, or FP16 probabilities) and cuts (column
// or key cuts).
struct FlaggedCuts {
  std::uint32_t count = 1;
  bool flag = false;
  std::vector<std::int64_t> cuts;
};

struct FlaggedCutsNames {
  const char* record;  // "row order"
  const char* count;   // "column ranges per part"
  const char* cut;     // "column cut"
};

template <typename Split, typename Fields>
void write_flagged_cuts(ByteWriter& out, const std::map<std::string, Split>& records, const FlaggedCutsNames& names,
                        Fields fields) {
  out.count(records.size(), names.record);
  for (const auto& [name, split] : records) {
    const FlaggedCuts record = fields(split);
    out.string(name);
    out.u32(record.count);
    out.u8(record.flag ? 1 : 0);
    out.count(record.cuts.size(), names.cut);
    write_vector(out, record.cuts);
  }
}

template <typename Split, typename Make>
void read_flagged_cuts(ByteReader& in, std::map<std::string, Split>& records, const FlaggedCutsNames& names,
                       Make make) {
  const std::uint32_t count = in.count(fmt::format("{} count", names.record), kMinRowOrderBytes);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t name_at = in.offset();
    std::string name = in.string(fmt::format("{} op name", names.record));
    FlaggedCuts record;
    const std::size_t count_at = in.offset();
    record.count = in.u32();
    if (record.count < 1 || record.count > 64)
      in.fail_at(count_at, "op '{}' has {} {}", name, record.count, names.count);
    const std::size_t flags_at = in.offset();
    const std::uint8_t flags = in.u8();
    if (flags & ~1u) in.fail_at(flags_at, "unknown {} flags {:#04x}", names.record, flags);
    record.flag = flags != 0;
    record.cuts = read_vector(in, in.count(fmt::format("{} count", names.cut), 8));
    if (!records.emplace(name, make(std::move(record))).second)
      in.fail_at(name_at, "op '{}' has two {}s", name, names.record);
  }
}

constexpr FlaggedCutsNames kRowOrderNames{"row order", "column ranges per part", "column cut"};
constexpr FlaggedCutsNames kAttentionOrderNames{"attention order", "softmax chunks", "key cut"};

void write_row_orders(ByteWriter& out, const graph::SummationOrder& order) {
  write_flagged_cuts(out, order.rows, kRowOrderNames, [](const reference::RowSplit& split) {
    return FlaggedCuts{static_cast<std::uint32_t>(split.ranges), split.merge_received, split.cuts};
  });
}

void read_row_orders(ByteReader& in, graph::SummationOrder& order) {
  read_flagged_cuts(in, order.rows, kRowOrderNames, [](FlaggedCuts record) {
    reference::RowSplit split;
    split.ranges = static_cast<int>(record.count);
    split.merge_received = record.flag;
    split.cuts = std::move(record.cuts);
    return split;
  });
}

void write_attention_orders(ByteWriter& out, const graph::SummationOrder& order) {
  write_flagged_cuts(out, order.attentions, kAttentionOrderNames, [](const reference::AttentionSplit& split) {
    return FlaggedCuts{static_cast<std::uint32_t>(split.softmax_chunks), split.half_probabilities, split.key_cuts};
  });
}

void read_attention_orders(ByteReader& in, graph::SummationOrder& order) {
  read_flagged_cuts(in, order.attentions, kAttentionOrderNames, [](FlaggedCuts record) {
    reference::AttentionSplit split;
    split.softmax_chunks = static_cast<int>(record.count);
    split.half_probabilities = record.flag;
    split.key_cuts = std::move(record.cuts);
    return split;
  });
}

graph::SummationOrder read_summation_order(ByteReader& in) {
  graph::SummationOrder order;
  const std::uint32_t gemms = in.count("summation order count", kMinOrderBytes);
  for (std::uint32_t i = 0; i < gemms; ++i) {
    const std::size_t name_at = in.offset();
    std::string name = in.string("summation order op name");
    reference::KSplit split;
    const std::size_t flags_at = in.offset();
    const std::uint8_t flags = in.u8();
    if (flags & ~(kHalfPartials | kPasses)) in.fail_at(flags_at, "unknown summation order flags {:#04x}", flags);
    split.half_partials = (flags & kHalfPartials) != 0;
    if (flags & kPasses) {
      const std::size_t passes_at = in.offset();
      split.pass_parts = in.u8();
      if (split.pass_parts < 2) in.fail_at(passes_at, "op '{}' is summed in passes of {} parts (at least 2)", name, split.pass_parts);
    }
    split.cuts = read_vector(in, in.count("K cut count", 8));
    split.orders.resize(in.count("column range count", 8 + 8 + 4));
    for (reference::KSplit::Columns& range : split.orders) {
      range.begin = in.i64();
      range.end = in.i64();
      range.parts.resize(in.count("part count", 4));
      for (int& part : range.parts) {
        const std::size_t part_at = in.offset();
        const std::uint32_t value = in.u32();
        if (value + 1 >= split.cuts.size())
          in.fail_at(part_at, "part {} of op '{}' does not exist ({} parts)", value, name,
                     split.cuts.empty() ? 0 : split.cuts.size() - 1);
        part = static_cast<int>(value);
      }
    }
    if (!order.gemms.emplace(name, std::move(split)).second)
      in.fail_at(name_at, "op '{}' has two summation orders", name);
  }
  read_row_orders(in, order);
  read_attention_orders(in, order);
  return order;
}

}  // namespace

EncodedBody encode_body(const Package& package) {
  SegmentContents table = distinct_segment_contents(package);
  ByteWriter out;
  out.bytes().reserve(table.stored_bytes() + 4096);
  out.string(package.target);
  out.string(package.compile_info);

  for (std::span<const std::uint8_t> content : table.contents) {
    out.count(content.size(), "content byte");
    out.raw(content);
  }

  for (std::size_t t = 0; t < package.tiles.size(); ++t) {
    const TileImage& tile = package.tiles[t];
    out.u32(tile.entry);
    out.u32(tile.peak_bytes);
    out.count(tile.segments.size(), "segment");
    for (std::size_t s = 0; s < tile.segments.size(); ++s) {
      const Segment& segment = tile.segments[s];
      out.string(segment.name);
      out.u32(segment.address);
      out.u8(segment.executable ? kSegmentExecutable : 0);
      out.u32(table.index[t][s]);
    }
    write_entries(out, tile.symbols, kSymbolKinds);
    write_entries(out, tile.regions, kRegionKinds);
    for (const Region& region : tile.regions) {
      out.i32(region.first_superstep);
      out.i32(region.last_superstep);
      out.string(region.op);
    }
  }

  for (const std::vector<std::uint32_t>& group : package.exchange_groups) {
    out.count(group.size(), "group member");
    for (std::uint32_t tile : group) out.u32(tile);
  }

  for (const Binding& binding : package.bindings) write_binding(out, binding);
  write_summation_order(out, package.summation_order);
  write_row_orders(out, package.summation_order);
  write_attention_orders(out, package.summation_order);
  write_schedule(out, package.schedule);

  EncodedBody body;
  body.counts = {static_cast<std::uint32_t>(package.tiles.size()),
                 static_cast<std::uint32_t>(table.contents.size()),
                 static_cast<std::uint32_t>(package.exchange_groups.size()),
                 static_cast<std::uint32_t>(package.bindings.size())};
  body.bytes = std::move(out.bytes());
  return body;
}

Package decode_body(std::span<const std::uint8_t> body, const BodyCounts& counts) {
  ByteReader in(body, "body");
  Package package;
  package.target = in.string("target");
  package.compile_info = in.string("compile_info");

  // Counts from the header are checked against the body's size like any other.
  auto check_count = [&](std::uint32_t count, std::size_t min_bytes, std::string_view what) {
    if (count > in.remaining() / min_bytes)
      in.fail("header's {} count {} needs more than the {} bytes left", what, count,
              in.remaining());
  };

  check_count(counts.contents, kMinContentBytes, "segment content");
  std::vector<std::shared_ptr<const std::vector<std::uint8_t>>> contents;
  contents.reserve(counts.contents);
  for (std::uint32_t i = 0; i < counts.contents; ++i) {
    std::uint32_t size = in.u32();
    std::span<const std::uint8_t> bytes = in.raw(size, fmt::format("segment content {}", i));
    contents.push_back(std::make_shared<const std::vector<std::uint8_t>>(bytes.begin(), bytes.end()));
  }
  std::vector<bool> used(counts.contents, false);

  check_count(counts.tiles, kMinTileBytes, "tile");
  package.tiles.resize(counts.tiles);
  for (TileImage& tile : package.tiles) {
    tile.entry = in.u32();
    tile.peak_bytes = in.u32();
    tile.segments.resize(in.count("segment count", kMinSegmentBytes));
    for (Segment& segment : tile.segments) {
      segment.name = in.string("segment name");
      segment.address = in.u32();
      std::size_t flags_at = in.offset();
      std::uint8_t flags = in.u8();
      if (flags & ~kSegmentExecutable) in.fail_at(flags_at, "unknown segment flags {:#04x}", flags);
      segment.executable = (flags & kSegmentExecutable) != 0;
      std::size_t index_at = in.offset();
      std::uint32_t index = in.u32();
      if (index >= counts.contents)
        in.fail_at(index_at, "segment content {} does not exist ({} contents)", index,
                   counts.contents);
      segment.bytes = contents[index];
      used[index] = true;
    }
    tile.symbols = read_entries<Symbol>(in, kSymbolKinds, "symbol kind");
    tile.regions = read_entries<Region>(in, kRegionKinds, "region kind");
    for (Region& region : tile.regions) {
      region.first_superstep = in.i32();
      region.last_superstep = in.i32();
      region.op = in.string("region op");
    }
  }
  for (std::uint32_t i = 0; i < counts.contents; ++i)
    if (!used[i]) in.fail("segment content {} is used by no segment", i);

  check_count(counts.groups, kMinGroupBytes, "exchange group");
  package.exchange_groups.resize(counts.groups);
  for (std::vector<std::uint32_t>& group : package.exchange_groups) {
    group.resize(in.count("group member count", 4));
    for (std::uint32_t& tile : group) tile = in.u32();
  }

  check_count(counts.bindings, kMinBindingBytes, "binding");
  package.bindings.reserve(counts.bindings);
  for (std::uint32_t i = 0; i < counts.bindings; ++i) package.bindings.push_back(read_binding(in));

  package.summation_order = read_summation_order(in);
  package.schedule = read_schedule(in);
  if (in.remaining() != 0) in.fail("{} bytes of trailing data after the schedule", in.remaining());
  return package;
}

}  // namespace tilec::package::detail
