#include "compiler/softmax_kernel.h"

#include "support/error.h"

#include <fmt/format.h>

#include <map>

namespace tilec::compiler {

namespace {

// Quads: Q0, Q1 the largest y of rows 0-3 and 4-7 of the half panel; Q2,
// Q3 their sums of exponentials, then the reciprocals; Q4, Q5 one column
// of the 8 rows in FP32; Q6 eight FP16 results. $a28 holds the scale,
// $a29 -inf.
constexpr int kLargest = 0, kSum = 2, kColumn = 4, kPacked = 6;
constexpr int kScale = 28, kMinusInf = 29;

// $m registers: the worker's half panels left, its input and output half
// panel (column 0), their column strides, the walks along a half panel's
// columns, and the statistics pointers.
constexpr int kHalves = 2, kColumns = 3, kInput = 4, kOutput = 5, kInStride = 6, kOutStride = 7;
constexpr int kInWalk = 8, kOutWalk = 9, kChunkWalk = 10;

std::string m(int r) { return fmt::format("$m{}", r); }
std::string q(int quad) { return quad_name(quad); }
RegisterMask mm(int r) { return m_reg(r); }

struct Step {
  std::vector<KernelOp> ops;  // straight-line code, or a loop body
  bool loop = false;
  SoftmaxTrip trip = SoftmaxTrip::Columns;
};

// A kernel before it is written: the entry's instructions, the steps of a
// half panel, and where loop counts live.
struct Plan {
  std::vector<KernelOp> entry;
  std::vector<Step> half;
  std::map<SoftmaxTrip, int> trip_register;  // holds the trip count
  std::vector<int> spare;                    // registers free after the entry, for counts
};

class Builder {
 public:
  explicit Builder(const RowVariant& variant) : v_(variant) {}

  Plan plan() {
    switch (v_.form) {
      case SoftmaxForm::Normalised: normalised(); break;
      case SoftmaxForm::Partial: partial(); break;
      case SoftmaxForm::ChunkMax: chunk_max(); break;
      case SoftmaxForm::ChunkExp: chunk_exp(); break;
      case SoftmaxForm::FinishStats: finish_stats(); break;
      case SoftmaxForm::FinishNormalise: finish_normalise(); break;
    }
    return std::move(plan_);
  }

 private:
  // Instructions of the step being built.
  std::vector<KernelOp>& ops() { return plan_.half.back().ops; }
  void straight() { plan_.half.push_back(Step{}); }
  void loop(SoftmaxTrip trip) { plan_.half.push_back(Step{{}, true, trip}); }

  void load_word(int reg, int offset) {
    plan_.entry.push_back(main_op(fmt::format("ldw {}, $m0, {}", m(reg), offset), mm(reg), mm(0) | kMemory));
  }
  void load_scale(int offset) {
    if (!v_.scaled) return;
    plan_.entry.push_back(main_op(fmt::format("ld32 $a{}, $m0, {}", kScale, offset), a_reg(kScale), mm(0) | kMemory));
  }
  void minus_infinity() {
    plan_.entry.push_back(main_op("setzi $m1, 0", mm(1), 0));
    plan_.entry.push_back(main_op("sethi $m1, 0xff80", mm(1), mm(1)));
    plan_.entry.push_back(main_op(fmt::format("movma $a{}, $m1", kMinusInf), a_reg(kMinusInf), mm(1)));
  }

  // Straight-line steps of a half panel.
  void set_walk(int walk, int base, int offset = 15) {
    ops().push_back(main_op(fmt::format("add {}, {}, {}", m(walk), m(base), m(offset)), mm(walk), mm(base) | mm(offset)));
  }
  void fill_largest() {
    ops().push_back(float_op(fmt::format("f32v4splat {}, $a{}", q(kLargest), kMinusInf), quad_mask(kLargest),
                             a_reg(kMinusInf)));
    ops().push_back(float_op(fmt::format("f32v4mov {}, {}", q(kLargest + 1), q(kLargest)), quad_mask(kLargest + 1),
                             quad_mask(kLargest)));
  }
  void zero_sums() {
    for (int quad : {kSum, kSum + 1}) ops().push_back(float_op("f32v4zero " + q(quad), quad_mask(quad), 0));
  }
  void scale_pair(int first) {
    if (!v_.scaled) return;
    for (int quad : {first, first + 1})
      ops().push_back(float_op(fmt::format("f32v4muls {0}, {0}, $a{1}", q(quad), kScale), quad_mask(quad),
                               quad_mask(quad) | a_reg(kScale)));
  }
  void reciprocals() {
    for (int quad : {kSum, kSum + 1})
      ops().push_back(float_op(fmt::format("f32v4recip {0}, {0}", q(quad)), quad_mask(quad), quad_mask(quad)));
  }
  // Stores quad `quad` at `pointer` + offset (the statistics).
  void store(int quad, int pointer, int offset) {
    ops().push_back(main_op(fmt::format("st128 {}, {}, {}", q(quad), m(pointer), offset), kMemory,
                            quad_mask(quad) | mm(pointer)));
  }
  void step(int reg, int bytes) {
    ops().push_back(main_op(fmt::format("addi {0}, {0}, {1}", m(reg), bytes), mm(reg), mm(reg)));
  }
  void next_half() {
    step(kInput, 8 * static_cast<int>(element_bytes(v_.input)));
    step(kOutput, 8 * static_cast<int>(element_bytes(v_.output)));
    step(kHalves, -1);
  }

  // Loop bodies: one column of the half panel's 8 rows. The walk steps by
  // the variant's stride in the column's last load, or by an add.
  void load_column(ElementType type) {
    const RegisterMask walk = mm(kInWalk);
    const std::uint32_t fixed = v_.input_stride;
    auto load = [&](int quad, int offset, bool last) {
      if (last && fixed)
        ops().push_back(main_op(fmt::format("ld128pi {}, {}, {}", q(quad), m(kInWalk), fixed), quad_mask(quad) | walk,
                                walk));
      else
        ops().push_back(main_op(fmt::format("ld128 {}, {}, {}", q(quad), m(kInWalk), offset), quad_mask(quad), walk));
    };
    if (type == ElementType::F32) {
      load(kColumn + 1, 16, false);
      load(kColumn, 0, true);
    } else {
      load(kColumn + 1, 0, true);
      ops().push_back(float_op(fmt::format("f16tof32lo {}, {}", q(kColumn), q(kColumn + 1)), quad_mask(kColumn),
                               quad_mask(kColumn + 1)));
      ops().push_back(float_op(fmt::format("f16tof32hi {0}, {0}", q(kColumn + 1)), quad_mask(kColumn + 1),
                               quad_mask(kColumn + 1)));
    }
    if (!fixed)
      ops().push_back(main_op(fmt::format("add {0}, {0}, {1}", m(kInWalk), m(kInStride)), walk, walk | mm(kInStride)));
  }
  // Column quads `x` combined lane by lane with quads `y` (x = op(x, y)).
  void lanes(const char* op, int x, int y) {
    for (int i : {0, 1})
      ops().push_back(float_op(fmt::format("{} {}, {}, {}", op, q(x + i), q(x + i), q(y + i)), quad_mask(x + i),
                               quad_mask(x + i) | quad_mask(y + i)));
  }
  void exponentials() {
    scale_pair(kColumn);
    lanes("f32v4sub", kColumn, kLargest);
    for (int i : {0, 1})
      ops().push_back(float_op(fmt::format("f32v4exp {0}, {0}", q(kColumn + i)), quad_mask(kColumn + i),
                               quad_mask(kColumn + i)));
  }
  void add_to_sums() {
    for (int i : {0, 1})
      ops().push_back(float_op(fmt::format("f32v4add {0}, {0}, {1}", q(kSum + i), q(kColumn + i)), quad_mask(kSum + i),
                               quad_mask(kSum + i) | quad_mask(kColumn + i)));
  }
  void store_column(ElementType type) {
    const RegisterMask walk = mm(kOutWalk);
    if (type == ElementType::F32) {
      ops().push_back(main_op(fmt::format("st128 {}, {}, 0", q(kColumn), m(kOutWalk)), 0, quad_mask(kColumn) | walk));
      ops().push_back(main_op(fmt::format("st128 {}, {}, 16", q(kColumn + 1), m(kOutWalk)), 0,
                              quad_mask(kColumn + 1) | walk));
    } else {
      for (int i : {0, 1})
        ops().push_back(float_op(fmt::format("f32tof16 {}, {}", pair_name(4 * kPacked + 2 * i), q(kColumn + i)),
                                 a_pair(4 * kPacked + 2 * i), quad_mask(kColumn + i)));
      ops().push_back(main_op(fmt::format("st128 {}, {}, 0", q(kPacked), m(kOutWalk)), 0, quad_mask(kPacked) | walk));
    }
    ops().push_back(main_op(fmt::format("add {0}, {0}, {1}", m(kOutWalk), m(kOutStride)), walk, walk | mm(kOutStride)));
  }
  // The chunks' statistics of this half panel: quad pairs at +0/+32 (m)
  // and +16/+48 (l) of each chunk, chunks `stride` apart.
  void load_chunk(int quad, int offset) {
    ops().push_back(main_op(fmt::format("ld128 {}, {}, {}", q(quad), m(kChunkWalk), offset), quad_mask(quad),
                            mm(kChunkWalk)));
  }
  void next_chunk(int stride) {
    ops().push_back(main_op(fmt::format("add {0}, {0}, {1}", m(kChunkWalk), m(stride)), mm(kChunkWalk),
                            mm(kChunkWalk) | mm(stride)));
  }
  void combine_chunks(bool largest, bool sums, int stride) {
    if (largest) {
      for (int i : {0, 1}) {
        load_chunk(kColumn, 32 * i);
        ops().push_back(float_op(fmt::format("f32v4max {0}, {0}, {1}", q(kLargest + i), q(kColumn)),
                                 quad_mask(kLargest + i), quad_mask(kLargest + i) | quad_mask(kColumn)));
      }
    }
    if (sums) {
      for (int i : {0, 1}) {
        load_chunk(kColumn + 1, 16 + 32 * i);
        ops().push_back(float_op(fmt::format("f32v4add {0}, {0}, {1}", q(kSum + i), q(kColumn + 1)),
                                 quad_mask(kSum + i), quad_mask(kSum + i) | quad_mask(kColumn + 1)));
      }
    }
    next_chunk(stride);
  }

  void common_entry() {
    load_word(kHalves, 0);
    load_word(kColumns, 4);
    load_word(kInput, 8);
  }

  // +0 h, +4 C, +8 in, +12 out, +16/+20 strides, +24 C', +28 c0 offset, +32 scale.
  void normalised() {
    constexpr int kOutputColumns = 11, kFirstColumn = 12;
    common_entry();
    load_word(kOutput, 12);
    load_word(kInStride, 16);
    load_word(kOutStride, 20);
    load_word(kOutputColumns, 24);
    load_word(kFirstColumn, 28);
    load_scale(32);
    minus_infinity();
    plan_.trip_register = {{SoftmaxTrip::Columns, kColumns}, {SoftmaxTrip::OutputColumns, kOutputColumns}};
    plan_.spare = {1, 10, 13, 14};
    straight();
    set_walk(kInWalk, kInput);
    fill_largest();
    loop(SoftmaxTrip::Columns);
    load_column(v_.input);
    lanes("f32v4max", kLargest, kColumn);
    straight();
    scale_pair(kLargest);
    set_walk(kInWalk, kInput);
    zero_sums();
    loop(SoftmaxTrip::Columns);
    load_column(v_.input);
    exponentials();
    add_to_sums();
    straight();
    reciprocals();
    set_walk(kInWalk, kInput, kFirstColumn);
    set_walk(kOutWalk, kOutput);
    loop(SoftmaxTrip::OutputColumns);
    load_column(v_.input);
    exponentials();
    lanes("f32v4mul", kColumn, kSum);
    store_column(v_.output);
    straight();
    next_half();
  }

  // +0 h, +4 C, +8 in, +12 out, +16/+20 strides, +24 stats, +28 scale.
  void partial() {
    constexpr int kStats = 10;
    common_entry();
    load_word(kOutput, 12);
    load_word(kInStride, 16);
    load_word(kOutStride, 20);
    load_word(kStats, 24);
    load_scale(28);
    minus_infinity();
    plan_.trip_register = {{SoftmaxTrip::Columns, kColumns}};
    plan_.spare = {1, 11, 12};
    straight();
    set_walk(kInWalk, kInput);
    fill_largest();
    loop(SoftmaxTrip::Columns);
    load_column(v_.input);
    lanes("f32v4max", kLargest, kColumn);
    straight();
    scale_pair(kLargest);
    set_walk(kInWalk, kInput);
    set_walk(kOutWalk, kOutput);
    zero_sums();
    loop(SoftmaxTrip::Columns);
    load_column(v_.input);
    exponentials();
    add_to_sums();
    store_column(v_.output);
    straight();
    store_stats(kStats);
    step(kStats, 64);
    next_half();
  }
  void store_stats(int pointer) {
    store(kLargest, pointer, 0);
    store(kSum, pointer, 16);
    store(kLargest + 1, pointer, 32);
    store(kSum + 1, pointer, 48);
  }

  // +0 h, +4 C (the chunk's), +8 in, +12 the chunk's stats, +16 in stride, +20 scale.
  void chunk_max() {
    constexpr int kStats = 10;
    common_entry();
    load_word(kStats, 12);
    load_word(kInStride, 16);
    load_scale(20);
    minus_infinity();
    plan_.trip_register = {{SoftmaxTrip::Columns, kColumns}};
    plan_.spare = {1, 11};
    straight();
    set_walk(kInWalk, kInput);
    fill_largest();
    loop(SoftmaxTrip::Columns);
    load_column(v_.input);
    lanes("f32v4max", kLargest, kColumn);
    straight();
    scale_pair(kLargest);
    store(kLargest, kStats, 0);
    store(kLargest + 1, kStats, 32);
    step(kStats, 64);
    step(kInput, 8 * static_cast<int>(element_bytes(v_.input)));
    step(kHalves, -1);
  }

  // +0 h, +4 C (the chunk's), +8 in, +12 e, +16/+20 strides, +24 chunk 0's
  // stats, +28 K, +32 chunk stride, +36 this chunk's stats, +40 scale.
  void chunk_exp() {
    constexpr int kChunks = 11, kChunkStride = 12, kOwn = 13, kFirstChunk = 14;
    common_entry();
    load_word(kOutput, 12);
    load_word(kInStride, 16);
    load_word(kOutStride, 20);
    load_word(kFirstChunk, 24);
    load_word(kChunks, 28);
    load_word(kChunkStride, 32);
    load_word(kOwn, 36);
    load_scale(40);
    minus_infinity();
    plan_.trip_register = {{SoftmaxTrip::Columns, kColumns}, {SoftmaxTrip::Chunks, kChunks}};
    plan_.spare = {1, 0};
    straight();
    set_walk(kChunkWalk, kFirstChunk);
    fill_largest();
    loop(SoftmaxTrip::Chunks);
    combine_chunks(true, false, kChunkStride);
    straight();
    set_walk(kInWalk, kInput);
    set_walk(kOutWalk, kOutput);
    zero_sums();
    loop(SoftmaxTrip::Columns);
    load_column(v_.input);
    exponentials();
    add_to_sums();
    store_column(v_.output);
    straight();
    store(kSum, kOwn, 16);
    store(kSum + 1, kOwn, 48);
    step(kOwn, 64);
    step(kFirstChunk, 64);
    next_half();
  }

  // +0 h, +4 K, +8 chunk 0's stats, +12 stats out, +16 chunk stride.
  void finish_stats() {
    constexpr int kChunks = 3, kFirstChunk = 14, kStats = 13, kChunkStride = 12;
    load_word(kHalves, 0);
    load_word(kChunks, 4);
    load_word(kFirstChunk, 8);
    load_word(kStats, 12);
    load_word(kChunkStride, 16);
    minus_infinity();
    plan_.trip_register = {{SoftmaxTrip::Chunks, kChunks}};
    plan_.spare = {1, 11};
    straight();
    set_walk(kChunkWalk, kFirstChunk);
    fill_largest();
    zero_sums();
    loop(SoftmaxTrip::Chunks);
    combine_chunks(true, true, kChunkStride);
    straight();
    store_stats(kStats);
    step(kStats, 64);
    step(kFirstChunk, 64);
    step(kHalves, -1);
  }

  // +0 h, +4 C (the chunk's), +8 e (FP32), +12 out, +16/+20 strides,
  // +24 chunk 0's stats, +28 K, +32 chunk stride.
  void finish_normalise() {
    constexpr int kChunks = 11, kChunkStride = 12, kFirstChunk = 14;
    common_entry();
    load_word(kOutput, 12);
    load_word(kInStride, 16);
    load_word(kOutStride, 20);
    load_word(kFirstChunk, 24);
    load_word(kChunks, 28);
    load_word(kChunkStride, 32);
    plan_.trip_register = {{SoftmaxTrip::Columns, kColumns}, {SoftmaxTrip::Chunks, kChunks}};
    plan_.spare = {1, 13};
    straight();
    set_walk(kChunkWalk, kFirstChunk);
    zero_sums();
    loop(SoftmaxTrip::Chunks);
    combine_chunks(false, true, kChunkStride);
    straight();
    reciprocals();
    set_walk(kInWalk, kInput);
    set_walk(kOutWalk, kOutput);
    loop(SoftmaxTrip::Columns);
    load_column(ElementType::F32);
    lanes("f32v4mul", kColumn, kSum);
    store_column(v_.output);
    straight();
    step(kFirstChunk, 64);
    next_half();
  }

  const RowVariant& v_;
  Plan plan_;
};

// Writes the plan (or only measures it, when `writer` is null).
SoftmaxShape emit(Plan plan, const std::string& name, KernelWriter* writer) {
  SoftmaxShape shape;
  // Each loop's count register: the trip count less (stages - 1).
  std::map<std::pair<SoftmaxTrip, int>, int> counts;
  std::vector<std::pair<Step*, std::string>> loop_counts;
  std::size_t next_spare = 0;
  for (Step& step : plan.half) {
    if (!step.loop) continue;
    const int offset = loop_shape(step.ops).stages - 1;
    const int base = plan.trip_register.at(step.trip);
    auto [it, added] = counts.try_emplace({step.trip, offset}, base);
    if (added && offset > 0) {
      TILEC_CHECK(next_spare < plan.spare.size(), "softmax kernel '{}' has no register for a loop count", name);
      it->second = plan.spare[next_spare++];
      plan.entry.push_back(main_op(fmt::format("addi {}, {}, {}", m(it->second), m(base), -offset), mm(it->second),
                                   mm(base)));
    }
    loop_counts.emplace_back(&step, m(it->second));
  }
  const std::vector<std::string> entry = pack_bundles(plan.entry);
  shape.entry = static_cast<int>(entry.size()) + 1;
  if (writer) {
    for (const std::string& bundle : entry) writer->line(bundle);
    writer->line(fmt::format("brz $m{}, {}_done", kHalves, name));
    writer->label(name + "_half");
  }
  std::size_t next_loop = 0;
  for (Step& step : plan.half) {
    if (step.loop) {
      const std::string& count = loop_counts[next_loop++].second;
      shape.loops.emplace_back(step.trip, writer ? writer->loop(step.ops, count) : loop_shape(step.ops));
    } else {
      const std::vector<std::string> bundles = pack_bundles(step.ops);
      shape.half_panel += static_cast<int>(bundles.size());
      if (writer)
        for (const std::string& bundle : bundles) writer->line(bundle);
    }
  }
  shape.half_panel += 1;
  if (writer) {
    writer->line(fmt::format("brnz $m{}, {}_half", kHalves, name));
    writer->label(name + "_done");
    writer->line("exit");
  }
  return shape;
}

void check_variant(const RowVariant& variant) {
  auto type_ok = [](ElementType t) { return t == ElementType::F16 || t == ElementType::F32; };
  TILEC_CHECK(!variant.layernorm && variant.generated(), "row variant is not a generated softmax");
  TILEC_CHECK(type_ok(variant.input) && type_ok(variant.output), "softmax kernel from {} to {}",
              element_type_name(variant.input), element_type_name(variant.output));
  TILEC_CHECK(variant.input_stride % 16 == 0 && variant.input_stride <= kMaxRowInputStride,
              "softmax kernel with an input stride of {} bytes (a multiple of 16 up to {})", variant.input_stride,
              kMaxRowInputStride);
}

}  // namespace

SoftmaxShape softmax_shape(const RowVariant& variant) {
  check_variant(variant);
  return emit(Builder(variant).plan(), "softmax", nullptr);
}

std::string softmax_source(const std::string& name, const RowVariant& variant) {
  check_variant(variant);
  KernelWriter writer(name);
  emit(Builder(variant).plan(), name, &writer);
  return writer.finish();
}

std::int64_t softmax_worker_bundles(const SoftmaxShape& shape, std::int64_t half_panels, std::int64_t columns,
                                    std::int64_t output_columns, std::int64_t chunks) {
  if (half_panels <= 0) return shape.entry + shape.exit;
  std::int64_t per_half = shape.half_panel;
  for (const auto& [trip, loop] : shape.loops) {
    const std::int64_t trips = trip == SoftmaxTrip::Columns       ? columns
                               : trip == SoftmaxTrip::OutputColumns ? output_columns
                                                                    : chunks;
    per_half += loop.bundles(trips);
  }
  return shape.entry + half_panels * per_half + shape.exit;
}

}  // namespace tilec::compiler
