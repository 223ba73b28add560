// A small but varied valid package for the package tests, and a deep
// comparison of two packages.
#pragma once

#include "isa/isa.h"
#include "package/package.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace tilec::package::testing {

using Bytes = std::vector<std::uint8_t>;

inline std::shared_ptr<const Bytes> shared_bytes(Bytes bytes) {
  return std::make_shared<const Bytes>(std::move(bytes));
}

// `bundles` encoded bundles: a few real instructions, and every fourth
// bundle an undecodable one (as data in a code segment would be).
inline Bytes sample_code(std::uint32_t bundles, std::uint8_t seed) {
  using isa::Opcode;
  Bytes code;
  for (std::uint32_t i = 0; i < bundles; ++i) {
    isa::Bundle bundle{isa::nop(), isa::fnop()};
    if (i % 4 == 1) bundle.main = {Opcode::Setzi, {1, static_cast<std::int32_t>(seed * 100 + i)}};
    if (i % 4 == 2) {
      bundle.main = {Opcode::Add, {2, 1, 1}};
      bundle.flt = {Opcode::F32v4add, {0, 4, 8}};
    }
    std::uint64_t bits = isa::encode_bundle(bundle);
    if (i % 4 == 3) bits = 0xFFFF'FF00'0000'0000ull | seed;
    for (int b = 0; b < 8; ++b) code.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
  }
  return code;
}

// The one-line message of the BadInput error that `action` throws.
template <typename Action>
std::string bad_input_message(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

inline Piece piece(std::uint32_t tile, std::uint32_t address, std::vector<std::int64_t> start,
                   std::vector<std::int64_t> size, std::vector<std::int64_t> strides) {
  return Piece{tile, address, std::move(start), std::move(size), std::move(strides)};
}

// ipu21:8. Tiles 0-3 share one code vector, tiles 4-5 hold equal copies of
// it, tile 6 has its own code and an extra kernel segment, tile 7 is idle.
// Bindings: an input split three ways (dense, padded rows, column-major), a
// replicated FP8 parameter, a rank-3 output and a scalar.
inline Package sample_package() {
  Package package = make_empty_package(ipu21_cut(8));
  package.compile_info = R"({"graph":"sample","budget_kib":624})";
  auto shared_code = shared_bytes(sample_code(32, 1));
  for (std::uint32_t t = 0; t < 7; ++t) {
    TileImage& tile = package.tiles[t];
    std::shared_ptr<const Bytes> code = t < 4   ? shared_code
                                        : t < 6 ? shared_bytes(*shared_code)
                                                : shared_bytes(sample_code(24, 2));
    tile.entry = 0x4C000 + 8;
    tile.segments.push_back({".text", 0x4C000, code, true});
    tile.segments.push_back({".args", 0x4D000, shared_bytes(Bytes(40, static_cast<std::uint8_t>(t))), false});
    tile.symbols.push_back({"main", 0x4C008, 16, SymbolKind::Function});
    tile.symbols.push_back({"args", 0x4D000, 40, SymbolKind::Data});
    tile.regions.push_back({"code", 0x4C000, static_cast<std::uint32_t>(code->size()), RegionKind::Code});
    tile.regions.push_back({"args", 0x4D000, 40, RegionKind::Arguments});
    tile.regions.push_back({"x", 0x80000, 64, RegionKind::Tensor});
    tile.regions.push_back({"recv", 0x90000, 512, RegionKind::ExchangeBuffer, 1, 3, "blocks/gemm2"});
    tile.regions.push_back({"tmp", 0x90000, 256, RegionKind::Scratch, 0, 0});
    tile.peak_bytes = 0x2000 + t;
  }
  package.tiles[6].segments.push_back({".kernels", 0x4E000, shared_bytes(sample_code(8, 3)), true});
  package.tiles[6].symbols.push_back({"gemm", 0x4E000, 64, SymbolKind::Kernel});
  package.tiles[6].entry = 0x4E010;
  package.exchange_groups = {{0, 1, 2, 3}, {4, 5}, {6}};
  package.schedule = Schedule{5, 2, 2, 4, "blocks", 1, 3, 2};

  Binding x{"x", BindingRole::Input, {{4, 6}, {ElementType::F16, 0}}, {}};
  x.pieces.push_back(piece(0, 0x80000, {0, 0}, {2, 6}, {6, 1}));
  x.pieces.push_back(piece(1, 0x80000, {2, 0}, {2, 3}, {4, 1}));  // rows padded to 4
  x.pieces.push_back(piece(2, 0x80000, {2, 3}, {2, 3}, {1, 2}));  // column-major
  Binding w{"w", BindingRole::Parameter, {{6, 8}, {ElementType::F143, -3}}, {}};
  w.pieces.push_back(piece(3, 0x80000, {0, 0}, {6, 8}, {8, 1}));
  w.pieces.push_back(piece(4, 0x80000, {0, 0}, {6, 8}, {9, 1}));  // a padded copy
  w.pieces.push_back(piece(5, 0x80000, {0, 0}, {3, 8}, {8, 1}));  // half again
  Binding y{"y", BindingRole::Output, {{2, 2, 8}, {ElementType::F32, 0}}, {}};
  y.pieces.push_back(piece(5, 0x88000, {0, 0, 0}, {2, 2, 4}, {8, 4, 1}));
  y.pieces.push_back(piece(6, 0x88000, {0, 0, 4}, {2, 2, 4}, {16, 4, 1}));
  Binding s{"s", BindingRole::Output, {{}, {ElementType::F32, 0}}, {}};
  s.pieces.push_back(piece(0, 0x88000, {}, {}, {}));
  package.bindings = {x, w, y, s};
  // A gemm of K 48 in three parts, FP16 partials, two column ranges.
  package.summation_order.gemms["blocks.gemm2"] =
      reference::KSplit{{0, 16, 32, 48}, true, {{0, 16, {0, 1, 2}}, {16, 32, {1, 0, 2}}}};
  package.summation_order.rows["norm"] = reference::RowSplit{{0, 3, 8}, 2, true};
  package.summation_order.attentions["attend"] = reference::AttentionSplit{{0, 32, 41}, 3, true};
  return package;
}

inline void expect_same_package(const Package& a, const Package& b) {
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.compile_info, b.compile_info);
  EXPECT_EQ(a.exchange_groups, b.exchange_groups);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.summation_order, b.summation_order);
  ASSERT_EQ(a.tiles.size(), b.tiles.size());
  for (std::size_t t = 0; t < a.tiles.size(); ++t) {
    SCOPED_TRACE(::testing::Message() << "tile " << t);
    const TileImage& x = a.tiles[t];
    const TileImage& y = b.tiles[t];
    EXPECT_EQ(x.entry, y.entry);
    EXPECT_EQ(x.peak_bytes, y.peak_bytes);
    ASSERT_EQ(x.segments.size(), y.segments.size());
    for (std::size_t s = 0; s < x.segments.size(); ++s) {
      EXPECT_EQ(x.segments[s].name, y.segments[s].name);
      EXPECT_EQ(x.segments[s].address, y.segments[s].address);
      EXPECT_EQ(x.segments[s].executable, y.segments[s].executable);
      ASSERT_TRUE(x.segments[s].bytes && y.segments[s].bytes);
      EXPECT_EQ(*x.segments[s].bytes, *y.segments[s].bytes);
    }
    ASSERT_EQ(x.symbols.size(), y.symbols.size());
    for (std::size_t s = 0; s < x.symbols.size(); ++s) {
      EXPECT_EQ(x.symbols[s].name, y.symbols[s].name);
      EXPECT_EQ(x.symbols[s].address, y.symbols[s].address);
      EXPECT_EQ(x.symbols[s].size, y.symbols[s].size);
      EXPECT_EQ(x.symbols[s].kind, y.symbols[s].kind);
    }
    ASSERT_EQ(x.regions.size(), y.regions.size());
    for (std::size_t r = 0; r < x.regions.size(); ++r) {
      EXPECT_EQ(x.regions[r].name, y.regions[r].name);
      EXPECT_EQ(x.regions[r].address, y.regions[r].address);
      EXPECT_EQ(x.regions[r].size, y.regions[r].size);
      EXPECT_EQ(x.regions[r].kind, y.regions[r].kind);
      EXPECT_EQ(x.regions[r].first_superstep, y.regions[r].first_superstep);
      EXPECT_EQ(x.regions[r].last_superstep, y.regions[r].last_superstep);
      EXPECT_EQ(x.regions[r].op, y.regions[r].op);
    }
  }
  ASSERT_EQ(a.bindings.size(), b.bindings.size());
  for (std::size_t i = 0; i < a.bindings.size(); ++i) {
    const Binding& x = a.bindings[i];
    const Binding& y = b.bindings[i];
    SCOPED_TRACE("binding " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(x.type, y.type);
    ASSERT_EQ(x.pieces.size(), y.pieces.size());
    for (std::size_t p = 0; p < x.pieces.size(); ++p) {
      EXPECT_EQ(x.pieces[p].tile, y.pieces[p].tile);
      EXPECT_EQ(x.pieces[p].address, y.pieces[p].address);
      EXPECT_EQ(x.pieces[p].start, y.pieces[p].start);
      EXPECT_EQ(x.pieces[p].size, y.pieces[p].size);
      EXPECT_EQ(x.pieces[p].strides, y.pieces[p].strides);
    }
  }
}

}  // namespace tilec::package::testing
