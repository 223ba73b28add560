// An FP8 GEMM on every tile, for the simulator's tests and its benchmark:
// tile t computes C[t] = A[t] x B[t] (A: M x K, B: K x N, F143 codes; C: FP16)
// on all six workers. Worker w owns rows 16w..16w+15 and walks the N/16
// column blocks; each block is a K loop of { ld128pi ; amp.f8 } bundles in
// a rpt body (two k per four bundles, registers double-buffered), drained
// with accrd.f16 + st128pi.
//
// Memory of each tile (interleaved): A blocked by 16 rows, k-major (16 bytes
// per k: a column of the block); B blocked by 16 columns, k-major (16 bytes
// per k: a row of the block); 16 bytes of slack after each, read by the
// loop's last prefetch; C row-major FP16.
#pragma once

#include "sim_test_support.h"

namespace tilec::sim::testing {

struct GemmShape {
  std::uint32_t tiles = 1;
  std::uint32_t k = 400;            // even
  std::uint32_t column_blocks = 4;  // N / 16
  int output_scale = 0;             // accrd.f16's scale: the sum of A's and B's scales

  static constexpr std::uint32_t kWorkers = 6;
  static constexpr std::uint32_t kRows = 16 * kWorkers;  // M: one 16-row block per worker
  std::uint32_t columns() const { return 16 * column_blocks; }
  std::uint32_t a_address() const { return kInterleavedData; }
  std::uint32_t b_address() const { return a_address() + kRows * k + 16; }
  std::uint32_t c_address() const { return b_address() + k * columns() + 16; }
  std::uint64_t macs_per_tile() const { return std::uint64_t{kRows} * columns() * k; }
};

constexpr std::uint32_t kGemmArguments = kStandardData;

// Every instruction matters: removing any one changes C or faults (the
// device tests rely on it), so addresses are set with one setzi each.
inline Code gemm_code(const GemmShape& shape) {
  Code code;
  int kernel = code.label();
  code.main(Opcode::Xdone);  // no exchange in this superstep
  code.main(Opcode::Setzi, {2, static_cast<std::int32_t>(kGemmArguments)});
  code.set_address(1, kernel);
  for (std::uint32_t worker = 0; worker < GemmShape::kWorkers; ++worker) code.main(Opcode::Run, {1, 2});
  code.main(Opcode::Wsync);
  code.main(Opcode::Halt);

  code.bind(kernel);
  // $m0 = arguments, $m1 = worker: {A, B, C, K/2, column blocks, A block bytes, C block bytes}
  for (int i = 0; i < 7; ++i) code.main(Opcode::Ldw, {2 + i, 0, 4 * i});
  code.main(Opcode::Mul, {9, 1, 7});
  code.main(Opcode::Add, {2, 2, 9});  // this worker's A block
  code.main(Opcode::Mul, {9, 1, 8});
  code.main(Opcode::Add, {4, 4, 9});  // this worker's C rows
  const std::int32_t row_bytes = static_cast<std::int32_t>(2 * shape.columns());
  const std::int32_t f143 = 0;
  int block = code.label();
  code.bind(block);
  code.both(ins(Opcode::Add, {11, 2, kZero}), ins(Opcode::Accz));
  code.main(Opcode::Ld128pi, {0, 11, 16});
  code.main(Opcode::Ld128pi, {4, 3, 16});
  code.main(Opcode::Rpt, {5, 4});
  code.both(ins(Opcode::Ld128pi, {8, 11, 16}), ins(Opcode::Ampf8, {0, 4, 0, f143, f143}));
  code.both(ins(Opcode::Ld128pi, {12, 3, 16}), ins(Opcode::Ampf8, {0, 6, 1, f143, f143}));
  code.both(ins(Opcode::Ld128pi, {0, 11, 16}), ins(Opcode::Ampf8, {8, 12, 0, f143, f143}));
  code.both(ins(Opcode::Ld128pi, {4, 3, 16}), ins(Opcode::Ampf8, {8, 14, 1, f143, f143}));
  // Drain: row r is stored while row r + 1 is read.
  code.both(ins(Opcode::Addi, {3, 3, -16}), ins(Opcode::Accrdf16, {16, 0, 0, shape.output_scale}));
  code.both(ins(Opcode::Addi, {12, 4, 0}), ins(Opcode::Accrdf16, {20, 0, 1, shape.output_scale}));
  code.main(Opcode::Addi, {13, 4, 16});
  for (int row = 0; row < 16; ++row) {
    bool more = row + 1 < 16;
    code.both(ins(Opcode::St128pi, {16, 12, row_bytes}),
              more ? ins(Opcode::Accrdf16, {16, row + 1, 0, shape.output_scale}) : isa::fnop());
    code.both(ins(Opcode::St128pi, {20, 13, row_bytes}),
              more ? ins(Opcode::Accrdf16, {20, row + 1, 1, shape.output_scale}) : isa::fnop());
  }
  code.main(Opcode::Addi, {4, 4, 32});
  code.main(Opcode::Addi, {6, 6, -1});
  code.branch(ins(Opcode::Brnz, {6, 0}), 1, block);
  code.main(Opcode::Exit);
  return code;
}

inline std::vector<std::uint32_t> gemm_arguments(const GemmShape& shape) {
  return {shape.a_address(), shape.b_address(), shape.c_address(), shape.k / 2, shape.column_blocks,
          16 * shape.k, 16 * 2 * shape.columns()};
}

// Bindings "a" [tiles, M, K] and "b" [tiles, K, N] (F143, scale 0) and
// "c" [tiles, M, N] (FP16) in the blocked layouts above.
inline std::vector<package::Binding> gemm_bindings(const GemmShape& shape) {
  const std::int64_t m = GemmShape::kRows, n = shape.columns(), k = shape.k, tiles = shape.tiles;
  package::Binding a{"a", package::BindingRole::Input, {{tiles, m, k}, {ElementType::F143, 0}}, {}};
  package::Binding b{"b", package::BindingRole::Input, {{tiles, k, n}, {ElementType::F143, 0}}, {}};
  package::Binding c{"c", package::BindingRole::Output, {{tiles, m, n}, {ElementType::F16, 0}}, {}};
  for (std::uint32_t tile = 0; tile < shape.tiles; ++tile) {
    const std::int64_t t = tile;
    for (std::int64_t block = 0; block < m / 16; ++block)
      a.pieces.push_back(package::Piece{tile, static_cast<std::uint32_t>(shape.a_address() + block * 16 * k),
                                        {t, 16 * block, 0}, {1, 16, k}, {m * k, 1, 16}});
    for (std::int64_t block = 0; block < n / 16; ++block)
      b.pieces.push_back(package::Piece{tile, static_cast<std::uint32_t>(shape.b_address() + block * 16 * k),
                                        {t, 0, 16 * block}, {1, k, 16}, {k * n, 16, 1}});
    c.pieces.push_back(package::Piece{tile, shape.c_address(), {t, 0, 0}, {1, m, n}, {m * n, n, 1}});
  }
  return {a, b, c};
}

inline package::Package gemm_package(const GemmShape& shape) {
  package::TileImage tile = image(gemm_code(shape), {data_segment(".args", kGemmArguments,
                                                                  as_bytes(gemm_arguments(shape)))});
  package::Package package = package_of(shape.tiles, tile);
  package.bindings = gemm_bindings(shape);
  return package;
}

}  // namespace tilec::sim::testing
