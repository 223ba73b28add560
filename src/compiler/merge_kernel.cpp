#include "compiler/merge_kernel.h"

#include "support/error.h"

#include <fmt/format.h>

namespace tilec::compiler {

namespace {

// $m registers.
constexpr int kTail = 1;           // tail columns (C mod 5)
constexpr int kQuads = 2;          // row quads left
constexpr int kOutQuad = 3;        // the output of this quad's first column
constexpr int kPartialsLess1 = 4;  // n - 1: the loops over the partials
constexpr int kPartialQuad = 5;    // partial 0's first column of this quad
constexpr int kPartialStride = 6;  // bytes from O_i to O_i+1
constexpr int kBlockBase = 7;      // partial 0's first column of this block
constexpr int kStatsQuad = 8;      // partial 0's statistics of this quad
constexpr int kWalk = 9;           // along the partials
constexpr int kWeightWalk = 10;    // along the scratch's weights
constexpr int kStatsStride = 11;   // bytes from stats_i to stats_i+1
constexpr int kOutWalk = 12;       // the output column being stored
constexpr int kScratch = 13;       // +0 1/L, +16 the block count, +32 the weights
constexpr int kBlocks = 14;        // full blocks left in this quad

// Quads: Q0..Q4 the accumulators of a block's columns; Q5 a partial's
// column, then each quotient; Q6 a weight, then 1/L; Q7 -L. While the
// statistics are read: Q0 M, Q1 L, Q4/Q5 m_i/l_i, $a28 -inf.
constexpr int kValue = 5, kWeight = 6, kMinusSum = 7;

std::string m(int r) { return fmt::format("$m{}", r); }
std::string q(int quad) { return quad_name(quad); }
RegisterMask mm(int r) { return m_reg(r); }

// A loop over the partials run with the count n - 1: its bundles are
// fixed + (n - 1) x interval.
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
    shape.quad += pack(before_largest());
    const PartialLoop largest = partial_loop(largest_body());
    shape.quad += pack(before_weights());
    const PartialLoop weights = partial_loop(weights_body());
    shape.quad += pack(after_weights());
    shape.quad += line(fmt::format("brz {}, {}_tails", m(kBlocks), name_));
    shape.statistics_fixed = {largest.fixed, weights.fixed};
    shape.statistics_interval = {largest.interval, weights.interval};
    label("block");
    block(kMergeBlockColumns, true, shape);
    label("tails");
    shape.dispatch = {1, 3, 5, 7, 8};
    line(fmt::format("brz {}, {}_quad_end", m(kTail), name_));
    for (int k = 1; k < kMergeBlockColumns; ++k) {
      if (k + 1 < kMergeBlockColumns) {
        line(fmt::format("cmpeqi {}, {}, {}", m(kWalk), m(kTail), k));
        line(fmt::format("brnz {}, {}_tail{}", m(kWalk), name_, k));
      } else {
        line(fmt::format("br {}_tail{}", name_, k));
      }
    }
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

  KernelOp word(int reg, int offset) const {
    return main_op(fmt::format("ldw {}, $m0, {}", m(reg), offset), mm(reg), mm(0) | kMemory);
  }

  // The argument block (docs/kernels.md), C split into blocks of 5 (C / 5
  // = C x 52429 >> 18 for C < 65536) and a tail, n - 1.
  std::vector<KernelOp> entry() const {
    std::vector<KernelOp> ops{word(kQuads, 0),    word(kBlocks, 4),        word(kPartialsLess1, 8),
                              word(kPartialQuad, 12), word(kPartialStride, 16), word(kStatsQuad, 20),
                              word(kStatsStride, 24), word(kOutQuad, 28),      word(kScratch, 32)};
    ops.push_back(main_op(fmt::format("setzi {}, 52429", m(kWalk)), mm(kWalk), 0));
    ops.push_back(main_op(fmt::format("mul {0}, {1}, {0}", m(kWalk), m(kBlocks)), mm(kWalk), mm(kWalk) | mm(kBlocks)));
    ops.push_back(main_op(fmt::format("shri {0}, {0}, 18", m(kWalk)), mm(kWalk), mm(kWalk)));
    ops.push_back(main_op(fmt::format("muli {}, {}, 5", m(kWeightWalk), m(kWalk)), mm(kWeightWalk), mm(kWalk)));
    ops.push_back(main_op(fmt::format("sub {}, {}, {}", m(kTail), m(kBlocks), m(kWeightWalk)), mm(kTail),
                          mm(kBlocks) | mm(kWeightWalk)));
    ops.push_back(main_op(fmt::format("stw {}, {}, 16", m(kWalk), m(kScratch)), kMemory, mm(kWalk) | mm(kScratch)));
    ops.push_back(main_op(fmt::format("addi {0}, {0}, -1", m(kPartialsLess1)), mm(kPartialsLess1), mm(kPartialsLess1)));
    return ops;
  }

  std::vector<KernelOp> before_largest() const {
    return {main_op(fmt::format("setzi {}, 0", m(kWalk)), mm(kWalk), 0),
            main_op(fmt::format("sethi {}, 0xff80", m(kWalk)), mm(kWalk), mm(kWalk)),
            main_op(fmt::format("movma $a28, {}", m(kWalk)), a_reg(28), mm(kWalk)),
            float_op("f32v4splat $a0:3, $a28", quad_mask(0), a_reg(28)),
            main_op(fmt::format("add {}, {}, $m15", m(kWalk), m(kStatsQuad)), mm(kWalk), mm(kStatsQuad))};
  }
  std::vector<KernelOp> next_partial_stats() const {
    return {main_op(fmt::format("add {0}, {0}, {1}", m(kWalk), m(kStatsStride)), mm(kWalk),
                    mm(kWalk) | mm(kStatsStride))};
  }
  // M = max_i m_i.
  std::vector<KernelOp> largest_body() const {
    std::vector<KernelOp> ops{main_op(fmt::format("ld128 $a16:19, {}, 0", m(kWalk)), quad_mask(4), mm(kWalk)),
                              float_op("f32v4max $a0:3, $a0:3, $a16:19", quad_mask(0), quad_mask(0) | quad_mask(4))};
    for (KernelOp& op : next_partial_stats()) ops.push_back(op);
    return ops;
  }
  std::vector<KernelOp> before_weights() const {
    return {main_op(fmt::format("add {}, {}, $m15", m(kWalk), m(kStatsQuad)), mm(kWalk), mm(kStatsQuad)),
            main_op(fmt::format("addi {}, {}, 32", m(kWeightWalk), m(kScratch)), mm(kWeightWalk), mm(kScratch)),
            float_op("f32v4zero $a4:7", quad_mask(1), 0)};
  }
  // w_i = exp(m_i - M) into the scratch; L = fma(w_i, l_i, L).
  std::vector<KernelOp> weights_body() const {
    std::vector<KernelOp> ops{
        main_op(fmt::format("ld128 $a16:19, {}, 0", m(kWalk)), quad_mask(4), mm(kWalk)),
        main_op(fmt::format("ld128 $a20:23, {}, 16", m(kWalk)), quad_mask(5), mm(kWalk)),
        float_op("f32v4sub $a16:19, $a16:19, $a0:3", quad_mask(4), quad_mask(4) | quad_mask(0)),
        float_op("f32v4exp $a16:19, $a16:19", quad_mask(4), quad_mask(4)),
        float_op("f32v4mac $a4:7, $a16:19, $a20:23", quad_mask(1), quad_mask(1) | quad_mask(4) | quad_mask(5)),
        main_op(fmt::format("st128pi $a16:19, {}, 16", m(kWeightWalk)), mm(kWeightWalk),
                quad_mask(4) | mm(kWeightWalk))};
    for (KernelOp& op : next_partial_stats()) ops.push_back(op);
    return ops;
  }
  // 1/L to the scratch, -L in Q7; the block walks at the quad's start.
  std::vector<KernelOp> after_weights() const {
    return {float_op("f32v4recip $a8:11, $a4:7", quad_mask(2), quad_mask(1)),
            float_op(fmt::format("f32v4zero {}", q(kMinusSum)), quad_mask(kMinusSum), 0),
            float_op(fmt::format("f32v4sub {0}, {0}, $a4:7", q(kMinusSum)), quad_mask(kMinusSum),
                     quad_mask(kMinusSum) | quad_mask(1)),
            main_op(fmt::format("st128 $a8:11, {}, 0", m(kScratch)), kMemory, quad_mask(2) | mm(kScratch)),
            main_op(fmt::format("add {}, {}, $m15", m(kBlockBase), m(kPartialQuad)), mm(kBlockBase), mm(kPartialQuad)),
            main_op(fmt::format("add {}, {}, $m15", m(kOutWalk), m(kOutQuad)), mm(kOutWalk), mm(kOutQuad)),
            main_op(fmt::format("ldw {}, {}, 16", m(kBlocks), m(kScratch)), mm(kBlocks), mm(kScratch) | kMemory)};
  }
  std::vector<KernelOp> next_quad() const {
    auto step = [](int reg, int bytes) {
      return main_op(fmt::format("addi {0}, {0}, {1}", m(reg), bytes), mm(reg), mm(reg));
    };
    return {step(kPartialQuad, 16), step(kOutQuad, 4 * static_cast<int>(element_bytes(v_.output))),
            step(kStatsQuad, 32), step(kQuads, -1)};
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

  // One block of k columns: every partial's k columns into accumulators
  // Q0..Q(k-1), then each divided by L. A full block ends with the jump
  // back to the next; a tail block with the jump to the quad's end.
  void block(int k, bool full, MergeShape& shape) {
    const auto cs = static_cast<int>(v_.partial_column_stride);
    std::vector<KernelOp> setup{
        main_op(fmt::format("add {}, {}, $m15", m(kWalk), m(kBlockBase)), mm(kWalk), mm(kBlockBase)),
        main_op(fmt::format("addi {}, {}, 32", m(kWeightWalk), m(kScratch)), mm(kWeightWalk), mm(kScratch)),
        main_op(fmt::format("ld128 {}, {}, 0", q(kValue), m(kWalk)), quad_mask(kValue), mm(kWalk)),
        main_op(fmt::format("ld128pi {}, {}, 16", q(kWeight), m(kWeightWalk)), quad_mask(kWeight) | mm(kWeightWalk),
                mm(kWeightWalk))};
    for (int t = 0; t < k; ++t) setup.push_back(float_op("f32v4zero " + q(t), quad_mask(t), 0));
    int bundles = pack(setup);
    bundles += line(fmt::format("rpt {}, {}", m(kPartialsLess1), k + 2));
    // Partial i: column t + 1 loads while column t is added.
    auto accumulate = [&](int t) { return fmt::format("f32v4mac {}, {}, {}", q(t), q(kValue), q(kWeight)); };
    auto next_column = [&](int t) {
      return fmt::format("{{ ld128 {}, {}, {} ; {} }}", q(kValue), m(kWalk), (t + 1) * cs, accumulate(t));
    };
    for (int t = 0; t + 1 < k; ++t) line(next_column(t));
    line(fmt::format("{{ ld128pi {}, {}, 16 ; {} }}", q(kWeight), m(kWeightWalk), accumulate(k - 1)));
    line(fmt::format("add {0}, {0}, {1}", m(kWalk), m(kPartialStride)));
    line(fmt::format("ld128 {}, {}, 0", q(kValue), m(kWalk)));
    // The last partial, then 1/L into Q6.
    for (int t = 0; t + 1 < k; ++t) bundles += line(next_column(t));
    bundles += line(fmt::format("{{ ld128 {}, {}, 0 ; {} }}", q(kWeight), m(kScratch), accumulate(k - 1)));
    bundles += divide(k, full);
    if (full) bundles += line(fmt::format("brnz {}, {}_block", m(kBlocks), name_));
    else bundles += line(fmt::format("br {}_quad_end", name_));
    shape.block[static_cast<std::size_t>(k)] = bundles;
    shape.per_partial[static_cast<std::size_t>(k)] = k + 2;
  }

  // out = acc / L correctly rounded (Markstein: q0 = acc x (1/L), r = acc -
  // q0 L exactly by a fused multiply-add, q = q0 + r x (1/L)), each quotient
  // stored in the next column's first bundle.
  int divide(int k, bool full) {
    const bool f16 = v_.output == ElementType::F16;
    const auto os = static_cast<int>(v_.output_column_stride);
    const std::string store = f16 ? fmt::format("st64pi $a20:21, {}, {}", m(kOutWalk), os)
                                  : fmt::format("st128pi {}, {}, {}", q(kValue), m(kOutWalk), os);
    std::vector<std::string> floats, mains;
    for (int t = 0; t < k; ++t) {
      if (t > 0) {
        mains.resize(floats.size());
        mains.push_back(store);
      }
      floats.push_back(fmt::format("f32v4mul {}, {}, {}", q(kValue), q(t), q(kWeight)));
      floats.push_back(fmt::format("f32v4mac {}, {}, {}", q(t), q(kValue), q(kMinusSum)));
      floats.push_back(fmt::format("f32v4mac {}, {}, {}", q(kValue), q(t), q(kWeight)));
      if (f16) floats.push_back(fmt::format("f32tof16 $a20:21, {}", q(kValue)));
    }
    mains.resize(floats.size());
    if (full) {
      // The block loop's steps go in free main slots (before the last store).
      std::vector<std::string> steps{
          fmt::format("addi {0}, {0}, -1", m(kBlocks)),
          fmt::format("addi {0}, {0}, {1}", m(kBlockBase), kMergeBlockColumns * v_.partial_column_stride)};
      for (std::string& slot : mains)
        if (slot.empty() && !steps.empty()) {
          slot = steps.back();
          steps.pop_back();
        }
      TILEC_CHECK(steps.empty(), "merge kernel block without room for its loop steps");
    }
    for (std::size_t i = 0; i < floats.size(); ++i)
      line(mains[i].empty() ? floats[i] : "{ " + mains[i] + " ; " + floats[i] + " }");
    line(store);
    return static_cast<int>(floats.size()) + 1;
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
  for (int s = 0; s < 2; ++s) per_quad += shape.statistics_fixed[static_cast<std::size_t>(s)] +
                                          more * shape.statistics_interval[static_cast<std::size_t>(s)];
  if (tail > 0) per_quad += block(tail);
  return shape.entry + quads * per_quad + shape.exit;
}

}  // namespace tilec::compiler
