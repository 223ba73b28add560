#include "compiler/merge_kernel.h"

#include <fmt/format.h>

namespace tilec::compiler {

namespace {

// $m registers.
constexpr int kTail = 1;           // tail columns (C mod 6)
constexpr int kQuads = 2;          // row quads left
constexpr int kOutQuad = 3;        // the output of this quad's first column
constexpr int kPartialsLess1 = 4;  // n - 1: the loops over the partials
constexpr int kPartialQuad = 5;    // partial 0's first column of this quad
constexpr int kPartialStride = 6;  // bytes from O_i to O_i+1
constexpr int kBlockBase = 7;      // partial 0's first column of this block
constexpr int kStatsQuad = 8;      // partial 0's statistics of this quad
constexpr int kWalk = 9;           // along the partials (their statistics, their columns)
constexpr int kWeightWalk = 10;    // along the scratch's weights
constexpr int kStatsStride = 11;   // bytes from stats_i to stats_i+1
constexpr int kOutWalk = 12;       // the output column being stored
constexpr int kScratch = 13;       // +0 the block count, +16 the weights u_i
constexpr int kBlocks = 14;        // full blocks left in this quad

// Quads: Q0..Q5 the accumulators of a block's columns, Q6 a partial's
// column, Q7 its weight u_i. While the statistics are read: Q0 M, Q1 L,
// Q2 1/L, Q3 -L, Q4 m_i then w_i, Q5 l_i, Q6 a quotient; $a28 -inf.
constexpr int kValue = 6, kWeight = 7;

std::string m(int r) { return fmt::format("$m{}", r); }
std::string q(int quad) { return quad_name(quad); }
RegisterMask mm(int r) { return m_reg(r); }
RegisterMask qm(int quad) { return quad_mask(quad); }

KernelOp word(int reg, int offset) {
  return main_op(fmt::format("ldw {}, $m0, {}", m(reg), offset), mm(reg), mm(0) | kMemory);
}
KernelOp copy(int to, int from) { return main_op(fmt::format("add {}, {}, $m15", m(to), m(from)), mm(to), mm(from)); }
KernelOp add_immediate(int reg, int from, std::int64_t value) {
  return main_op(fmt::format("addi {}, {}, {}", m(reg), m(from), value), mm(reg), mm(from));
}
KernelOp float3(const char* op, int d, int a, int b, RegisterMask extra_reads = 0) {
  return float_op(fmt::format("{} {}, {}, {}", op, q(d), q(a), q(b)), qm(d), qm(a) | qm(b) | extra_reads);
}

// A loop over the partials run with the count n - 1: fixed + (n - 1) x
// interval bundles.
struct PartialLoop {
  int fixed = 0;
  int interval = 0;
};

class Emitter {
 public:
  Emitter(const MergeVariant& variant, std::string name, KernelWriter* writer)
      : v_(variant), name_(std::move(name)), w_(writer) {}

  MergeShape emit() {
    MergeShape shape;
    shape.entry = pack(entry()) + line(fmt::format("brz {}, {}_done", m(kQuads), name_));
    label("quad");
    const std::vector<KernelOp>* bodies[] = {&largest_body_, &weights_body_, &quotients_body_};
    const std::vector<KernelOp>* befores[] = {&before_largest_, &before_weights_, &before_quotients_};
    for (std::size_t s = 0; s < 3; ++s) {
      shape.quad += pack(*befores[s]);
      const PartialLoop loop = partial_loop(*bodies[s]);
      shape.statistics_fixed[s] = loop.fixed;
      shape.statistics_interval[s] = loop.interval;
    }
    shape.quad += pack(start_blocks_) + line(fmt::format("brz {}, {}_tails", m(kBlocks), name_));
    label("block");
    block(kMergeBlockColumns, true, shape);
    label("tails");
    // The tail block by C mod 6: 1 + 2 t bundles to reach tail t < 5, 10 for 5.
    line(fmt::format("brz {}, {}_quad_end", m(kTail), name_));
    for (int k = 1; k + 1 < kMergeBlockColumns; ++k) {
      line(fmt::format("cmpeqi {}, {}, {}", m(kWalk), m(kTail), k));
      line(fmt::format("brnz {}, {}_tail{}", m(kWalk), name_, k));
    }
    line(fmt::format("br {}_tail{}", name_, kMergeBlockColumns - 1));
    for (int t = 0; t < kMergeBlockColumns; ++t) shape.dispatch[static_cast<std::size_t>(t)] = t == 0 ? 1 : 1 + 2 * t;
    shape.dispatch[kMergeBlockColumns - 1] = 2 * kMergeBlockColumns - 2;
    for (int k = 1; k < kMergeBlockColumns; ++k) {
      label(fmt::format("tail{}", k));
      block(k, false, shape);
    }
    label("quad_end");
    shape.quad += pack(next_quad()) + line(fmt::format("brnz {}, {}_quad", m(kQuads), name_));
    label("done");
    shape.exit = line("exit");
    return shape;
  }

 private:
  int pack(const std::vector<KernelOp>& ops) { return w_ ? w_->pack(ops) : static_cast<int>(pack_bundles(ops).size()); }
  int line(const std::string& bundle) { return w_ ? w_->line(bundle) : 1; }
  void label(const std::string& suffix) {
    if (w_) w_->label(name_ + "_" + suffix);
  }

  // The argument block (docs/kernels.md); C split into blocks of 6 (C / 6 =
  // C x 43691 >> 18 for C < 65536, kept in the scratch) and a tail; n - 1.
  std::vector<KernelOp> entry() const {
    std::vector<KernelOp> ops{word(kQuads, 0),        word(kBlocks, 4),       word(kPartialsLess1, 8),
                              word(kPartialQuad, 12), word(kPartialStride, 16), word(kStatsQuad, 20),
                              word(kStatsStride, 24), word(kOutQuad, 28),     word(kScratch, 32)};
    ops.push_back(main_op(fmt::format("setzi {}, 43691", m(kWalk)), mm(kWalk), 0));
    ops.push_back(main_op(fmt::format("mul {0}, {1}, {0}", m(kWalk), m(kBlocks)), mm(kWalk), mm(kWalk) | mm(kBlocks)));
    ops.push_back(main_op(fmt::format("shri {0}, {0}, 18", m(kWalk)), mm(kWalk), mm(kWalk)));
    ops.push_back(main_op(fmt::format("muli {}, {}, {}", m(kWeightWalk), m(kWalk), kMergeBlockColumns), mm(kWeightWalk),
                          mm(kWalk)));
    ops.push_back(main_op(fmt::format("sub {}, {}, {}", m(kTail), m(kBlocks), m(kWeightWalk)), mm(kTail),
                          mm(kBlocks) | mm(kWeightWalk)));
    ops.push_back(main_op(fmt::format("stw {}, {}, 0", m(kWalk), m(kScratch)), kMemory, mm(kWalk) | mm(kScratch)));
    ops.push_back(add_immediate(kPartialsLess1, kPartialsLess1, -1));
    return ops;
  }

  KernelOp next_stats() const {
    return main_op(fmt::format("add {0}, {0}, {1}", m(kWalk), m(kStatsStride)), mm(kWalk), mm(kWalk) | mm(kStatsStride));
  }
  KernelOp load(int quad, int pointer, int offset) const {
    return main_op(fmt::format("ld128 {}, {}, {}", q(quad), m(pointer), offset), qm(quad), mm(pointer));
  }

  // M = max_i m_i, from -inf.
  const std::vector<KernelOp> before_largest_{
      main_op(fmt::format("setzi {}, 0", m(kWalk)), mm(kWalk), 0),
      main_op(fmt::format("sethi {}, 0xff80", m(kWalk)), mm(kWalk), mm(kWalk)),
      main_op(fmt::format("movma $a28, {}", m(kWalk)), a_reg(28), mm(kWalk)),
      float_op("f32v4splat $a0:3, $a28", qm(0), a_reg(28)),
      copy(kWalk, kStatsQuad)};
  const std::vector<KernelOp> largest_body_{load(4, kWalk, 0), float3("f32v4max", 0, 0, 4), next_stats()};
  // w_i = exp(m_i - M) into the scratch, L = fma(w_i, l_i, L) from +0.
  const std::vector<KernelOp> before_weights_{copy(kWalk, kStatsQuad), add_immediate(kWeightWalk, kScratch, 16),
                                               float_op("f32v4zero $a4:7", qm(1), 0)};
  const std::vector<KernelOp> weights_body_{
      load(4, kWalk, 0),
      load(5, kWalk, 16),
      float3("f32v4sub", 4, 4, 0),
      float_op("f32v4exp $a16:19, $a16:19", qm(4), qm(4)),
      float3("f32v4mac", 1, 4, 5, qm(1)),
      main_op(fmt::format("st128pi $a16:19, {}, 16", m(kWeightWalk)), mm(kWeightWalk), qm(4) | mm(kWeightWalk)),
      next_stats()};
  // u_i = w_i / L correctly rounded (Markstein: q0 = w (1/L), r = w - q0 L
  // exactly by a fused multiply-add, u = q0 + r (1/L)), in place.
  const std::vector<KernelOp> before_quotients_{
      float_op("f32v4recip $a8:11, $a4:7", qm(2), qm(1)),
      float_op("f32v4zero $a12:15", qm(3), 0),
      float3("f32v4sub", 3, 3, 1),
      add_immediate(kWeightWalk, kScratch, 16),
      add_immediate(kWalk, kScratch, 16)};
  const std::vector<KernelOp> quotients_body_{
      main_op(fmt::format("ld128pi $a16:19, {}, 16", m(kWeightWalk)), qm(4) | mm(kWeightWalk), mm(kWeightWalk)),
      float3("f32v4mul", 6, 4, 2),
      float3("f32v4mac", 4, 6, 3, qm(4)),
      float3("f32v4mac", 6, 4, 2, qm(6)),
      main_op(fmt::format("st128pi $a24:27, {}, 16", m(kWalk)), mm(kWalk), qm(6) | mm(kWalk))};
  // The block walks at the quad's first column.
  const std::vector<KernelOp> start_blocks_{
      copy(kBlockBase, kPartialQuad), copy(kOutWalk, kOutQuad),
      main_op(fmt::format("ldw {}, {}, 0", m(kBlocks), m(kScratch)), mm(kBlocks), mm(kScratch) | kMemory)};

  std::vector<KernelOp> next_quad() const {
    return {add_immediate(kPartialQuad, kPartialQuad, 16),
            add_immediate(kOutQuad, kOutQuad, 4 * static_cast<int>(element_bytes(v_.output))),
            add_immediate(kStatsQuad, kStatsQuad, 32), add_immediate(kQuads, kQuads, -1)};
  }

  // A loop over the partials with the count n - 1: a two-stage schedule
  // runs n trips so; a one-stage one gets its first trip written out.
  PartialLoop partial_loop(const std::vector<KernelOp>& body) {
    const LoopShape shape = loop_shape(body);
    PartialLoop loop;
    if (shape.stages == 1) loop.fixed = pack(body);
    const LoopShape written = w_ ? w_->loop(body, m(kPartialsLess1)) : shape;
    loop.fixed += written.outside;
    loop.interval = written.interval;
    return loop;
  }

  // One block of k columns: acc_t = fma(u_i, O_i[t], acc_t) over the
  // partials in order from +0, then the stores. Partial i's column t + 1
  // loads while column t is added; a full block ends with the step to the
  // next, a tail block with the jump to the quad's end.
  void block(int k, bool full, MergeShape& shape) {
    const auto cs = static_cast<int>(v_.partial_column_stride);
    std::vector<KernelOp> setup{copy(kWalk, kBlockBase), add_immediate(kWeightWalk, kScratch, 16),
                                load(kValue, kWalk, 0),
                                main_op(fmt::format("ld128pi {}, {}, 16", q(kWeight), m(kWeightWalk)),
                                        qm(kWeight) | mm(kWeightWalk), mm(kWeightWalk))};
    for (int t = 0; t < k; ++t) setup.push_back(float_op("f32v4zero " + q(t), qm(t), 0));
    int bundles = pack(setup);
    bundles += line(fmt::format("rpt {}, {}", m(kPartialsLess1), k + 2));
    auto accumulate = [&](int t) { return float3("f32v4mac", t, kValue, kWeight, qm(t)); };
    auto next_column = [&](int t) {
      return fmt::format("{{ ld128 {}, {}, {} ; {} }}", q(kValue), m(kWalk), (t + 1) * cs, accumulate(t).text);
    };
    for (int t = 0; t + 1 < k; ++t) line(next_column(t));
    line(fmt::format("{{ ld128pi {}, {}, 16 ; {} }}", q(kWeight), m(kWeightWalk), accumulate(k - 1).text));
    line(fmt::format("add {0}, {0}, {1}", m(kWalk), m(kPartialStride)));
    line(fmt::format("ld128 {}, {}, 0", q(kValue), m(kWalk)));
    // The last partial, the stores (FP16: each quad rounded to a pair
    // first) and the block loop's steps, packed.
    std::vector<KernelOp> last;
    for (int t = 0; t < k; ++t) {
      last.push_back(accumulate(t));
      if (t + 1 < k) last.push_back(load(kValue, kWalk, (t + 1) * cs));
    }
    const auto os = static_cast<int>(v_.output_column_stride);
    const RegisterMask out = mm(kOutWalk);
    for (int t = 0; t < k; ++t) {
      if (v_.output == ElementType::F16) {
        last.push_back(float_op(fmt::format("f32tof16 {}, {}", pair_name(4 * t), q(t)), a_pair(4 * t), qm(t)));
        last.push_back(main_op(fmt::format("st64pi {}, {}, {}", pair_name(4 * t), m(kOutWalk), os), out,
                               a_pair(4 * t) | out));
      } else {
        last.push_back(main_op(fmt::format("st128pi {}, {}, {}", q(t), m(kOutWalk), os), out, qm(t) | out));
      }
    }
    if (full) {
      last.push_back(add_immediate(kBlocks, kBlocks, -1));
      last.push_back(add_immediate(kBlockBase, kBlockBase, std::int64_t{kMergeBlockColumns} * cs));
    }
    bundles += pack(last);
    if (full) bundles += line(fmt::format("brnz {}, {}_block", m(kBlocks), name_));
    else bundles += line(fmt::format("br {}_quad_end", name_));
    shape.block[static_cast<std::size_t>(k)] = bundles;
    shape.per_partial[static_cast<std::size_t>(k)] = k + 2;
  }

  const MergeVariant& v_;
  std::string name_;
  KernelWriter* w_;
};

}  // namespace

MergeShape merge_shape(const MergeVariant& variant) { return Emitter(variant, "merge", nullptr).emit(); }

std::string merge_source(const std::string& name, const MergeVariant& variant) {
  KernelWriter writer(name);
  Emitter(variant, name, &writer).emit();
  return writer.finish();
}

std::int64_t merge_worker_bundles(const MergeShape& shape, std::int64_t quads, std::int64_t columns,
                                  std::int64_t partials) {
  if (quads <= 0) return shape.entry + shape.exit;
  const std::int64_t more = partials - 1;
  const std::int64_t blocks = columns / kMergeBlockColumns, tail = columns % kMergeBlockColumns;
  auto block = [&](std::int64_t k) {
    return shape.block[static_cast<std::size_t>(k)] + more * shape.per_partial[static_cast<std::size_t>(k)];
  };
  std::int64_t per_quad = shape.quad + shape.dispatch[static_cast<std::size_t>(tail)] + blocks * block(kMergeBlockColumns);
  for (std::size_t s = 0; s < shape.statistics_fixed.size(); ++s)
    per_quad += shape.statistics_fixed[s] + more * shape.statistics_interval[s];
  if (tail > 0) per_quad += block(tail);
  return shape.entry + quads * per_quad + shape.exit;
}

}  // namespace tilec::compiler
