#include "compiler/combine_kernel.h"

#include "compiler/kernel_schedule.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::compiler {

namespace {

using isa::Slot;

const char* fp8_name(ElementType type) { return type == ElementType::F152 ? "f152" : "f143"; }

std::string quad(int q) { return fmt::format("$a{}:{}", 4 * q, 4 * q + 3); }
std::string pair(int first) { return fmt::format("$a{}:{}", first, first + 1); }
std::string single(int index) { return fmt::format("$a{}", index); }
RegisterMask q_mask(int q) { return a_quad(4 * q); }

// The bias, per column: in every lane of $a28:31 (FP32 lanes use $a28).
constexpr int kBiasQuad = 7;
constexpr int kOutputPointer = 4;
constexpr int kBiasPointer = 5;
constexpr int kFirstInputPointer = 6;

// How a loop body holds its groups of 8 elements in registers.
struct CombineLayout {
  int unroll = 1;      // groups of 8 elements per loop iteration
  bool spare = false;  // a quad per group for rounded results
};

// Builds the loop body of a combine kernel for `unroll` groups of 8
// elements, each group in its own registers. Values are summed in FP32
// lanes (two quads) when an input, the sum or anything later is FP32, else
// in FP16 lanes (one quad); once a value is rounded to 16 bits or fewer and
// nothing later needs FP32, the kernel narrows to FP16 lanes (cheaper GELU
// and casts). Every step works in place, so a group needs one lane set (two
// quads in FP32 lanes, one in FP16 lanes) for the value, another for the
// next input being added to it, and optionally one quad more for rounded
// results (which frees the wider registers sooner).
class CombineWriter {
 public:
  explicit CombineWriter(const CombineVariant& variant) : v_(variant) {
    for (const CombineStage& stage : v_.stages) {
      needs_f32_later_ |= stage.result.element == ElementType::F32;
      if (stage.kind == EpilogueOp::Kind::AddBias) needs_f32_later_ |= v_.bias == ElementType::F32;
    }
    f32_at_start_ =
        v_.input.element == ElementType::F32 || v_.sum.element == ElementType::F32 || needs_f32_later_;
  }

  bool has_bias() const {
    return std::any_of(v_.stages.begin(), v_.stages.end(),
                       [](const CombineStage& s) { return s.kind == EpilogueOp::Kind::AddBias; });
  }
  // FP16 inputs added to FP32 lanes: loaded into one quad, added half by half.
  bool adds_f16_to_f32() const { return f32_at_start_ && v_.input.element == ElementType::F16; }
  int group_quads(bool spare) const {
    const int value = f32_at_start_ ? 2 : 1;
    const int next_input = v_.inputs == 1 ? 0 : adds_f16_to_f32() ? 1 : value;
    return value + next_input + (spare ? 1 : 0);
  }
  // Whether the registers hold `layout` (the bias takes the last quad).
  bool fits(const CombineLayout& layout) const {
    return layout.unroll * group_quads(layout.spare) <= (has_bias() ? kBiasQuad : 8);
  }

  std::vector<KernelOp> body(const CombineLayout& layout) {
    ops_.clear();
    for (int group = 0; group < layout.unroll; ++group)
      write_group(group * group_quads(layout.spare), layout.spare);
    return ops_;
  }

  // Per column, before its loop: the bias in the lanes its stage uses.
  std::vector<std::string> column_setup() const {
    if (!has_bias()) return {};
    const std::string load = fmt::format("ld32pi {}, $m{}, 4", single(4 * kBiasQuad), kBiasPointer);
    if (!bias_in_f32_lanes_) return {load, fmt::format("f32v4splat {}, {}", quad(kBiasQuad), single(4 * kBiasQuad))};
    if (v_.bias == ElementType::F16) return {load, fmt::format("f16tof32lo {0}, {0}", quad(kBiasQuad))};
    return {load};
  }

 private:
  void emit(Slot slot, std::string text, RegisterMask writes, RegisterMask reads) {
    ops_.push_back(KernelOp{slot, std::move(text), reads, writes});
  }
  void flt(std::string text, RegisterMask writes, RegisterMask reads) {
    emit(Slot::Float, std::move(text), writes, reads);
  }
  void write_group(int first_quad, bool spare) {
    f32_ = f32_at_start_;
    const int lanes = f32_ ? 2 : 1;
    v0_ = first_quad;
    v1_ = first_quad + 1;
    t0_ = first_quad + lanes;
    t1_ = t0_ + 1;
    spare_ = spare ? first_quad + group_quads(false) : -1;
    load_input(0, v0_, v1_);
    for (int i = 1; i < v_.inputs; ++i) {
      if (adds_f16_to_f32()) add_f16_input(i);
      else add_input(i);
    }
    // What the value is exactly representable in: a rounding to it is a no-op.
    current_ = v_.inputs > 1 || v_.input != v_.sum ? lanes_type() : v_.input;
    if (!v_.stages.empty()) round_to(v_.sum);
    for (std::size_t i = 0; i < v_.stages.size(); ++i) {
      const CombineStage& stage = v_.stages[i];
      if (stage.kind == EpilogueOp::Kind::AddBias) add_bias();
      if (stage.kind == EpilogueOp::Kind::Gelu) apply_gelu(stage.approximation == graph::GeluApproximation::Erf ? 1 : 0);
      if (i + 1 < v_.stages.size()) round_to(stage.result);
    }
    store(v_.output());
  }

  // Each sum lands in the registers of the input just added, freeing the
  // previous sum's for the next input: short register lifetimes leave the
  // schedule room to overlap iterations.
  void add_input(int index) {
    load_input(index, t0_, t1_);
    const char* add = f32_ ? "f32v4add" : "f16v8add";
    for (auto [sum, input] : f32_ ? std::vector<std::pair<int, int>>{{v0_, t0_}, {v1_, t1_}}
                                  : std::vector<std::pair<int, int>>{{v0_, t0_}})
      flt(fmt::format("{} {}, {}, {}", add, quad(input), quad(sum), quad(input)), q_mask(input),
          q_mask(sum) | q_mask(input));
    std::swap(v0_, t0_);
    std::swap(v1_, t1_);
  }
  // An FP16 input's 8 lanes into one quad, each half added to its FP32 quad
  // of the sum in place.
  void add_f16_input(int index) {
    const RegisterMask pointer = m_reg(kFirstInputPointer + index);
    emit(Slot::Main, fmt::format("ld128pi {}, $m{}, 16", quad(t0_), kFirstInputPointer + index),
         q_mask(t0_) | pointer, pointer);
    flt(fmt::format("f32v4addlo {0}, {0}, {1}", quad(v0_), quad(t0_)), q_mask(v0_), q_mask(v0_) | q_mask(t0_));
    flt(fmt::format("f32v4addhi {0}, {0}, {1}", quad(v1_), quad(t0_)), q_mask(v1_), q_mask(v1_) | q_mask(t0_));
  }

  StorageType lanes_type() const { return StorageType{f32_ ? ElementType::F32 : ElementType::F16, 0}; }

  void load_input(int index, int x0, int x1) {
    const int pointer = kFirstInputPointer + index;
    const RegisterMask p = m_reg(pointer);
    const StorageType in = v_.input;
    auto load = [&](const char* op, const std::string& target, RegisterMask written, int step) {
      emit(Slot::Main, fmt::format("{} {}, $m{}, {}", op, target, pointer, step), written | p, p);
    };
    if (f32_) {
      switch (in.element) {
        case ElementType::F32:
          load("ld128pi", quad(x0), q_mask(x0), 16);
          load("ld128pi", quad(x1), q_mask(x1), 16);
          return;
        case ElementType::F16:
          load("ld128pi", quad(x1), q_mask(x1), 16);
          flt(fmt::format("f16tof32lo {}, {}", quad(x0), quad(x1)), q_mask(x0), q_mask(x1));
          flt(fmt::format("f16tof32hi {0}, {0}", quad(x1)), q_mask(x1), q_mask(x1));
          return;
        default:
          load("ld64pi", pair(4 * x1), a_pair(4 * x1), 8);
          flt(fmt::format("f8tof32 {}, {}, {}, {}", quad(x0), single(4 * x1), fp8_name(in.element), in.scale),
              q_mask(x0), a_reg(4 * x1));
          flt(fmt::format("f8tof32 {}, {}, {}, {}", quad(x1), single(4 * x1 + 1), fp8_name(in.element), in.scale),
              q_mask(x1), a_reg(4 * x1 + 1));
          return;
      }
    }
    if (in.element == ElementType::F16) {
      load("ld128pi", quad(x0), q_mask(x0), 16);
    } else {
      load("ld64pi", pair(4 * x0), a_pair(4 * x0), 8);
      flt(fmt::format("f8tof16 {}, {}, {}, {}", quad(x0), pair(4 * x0), fp8_name(in.element), in.scale), q_mask(x0),
          a_pair(4 * x0));
    }
  }

  // Where rounded results go: the spare quad, else the value's first quad.
  int rounded_quad() const { return spare_ >= 0 ? spare_ : v0_; }
  // Makes the rounded quad the value's (the old one becomes the spare).
  void take_rounded(int target) {
    if (target == v0_) return;
    spare_ = v0_;
    v0_ = target;
  }

  // FP32 lanes to FP16 lanes: the FP16 values rounded once from FP32 into
  // `target`'s pairs.
  void round_to_f16(int target) {
    flt(fmt::format("f32tof16 {}, {}", pair(4 * target), quad(v0_)), a_pair(4 * target), q_mask(v0_));
    flt(fmt::format("f32tof16 {}, {}", pair(4 * target + 2), quad(v1_)), a_pair(4 * target + 2), q_mask(v1_));
  }
  void narrow_to_f16() {
    const int target = rounded_quad();
    round_to_f16(target);
    take_rounded(target);
    f32_ = false;
  }
  // The value's FP8 codes in the first pair of `target`.
  void to_fp8(StorageType to, int target) {
    const char* format = fp8_name(to.element);
    if (f32_) {
      flt(fmt::format("f32tof8 {}, {}, {}, {}", single(4 * target), quad(v0_), format, to.scale), a_reg(4 * target),
          q_mask(v0_));
      flt(fmt::format("f32tof8 {}, {}, {}, {}", single(4 * target + 1), quad(v1_), format, to.scale),
          a_reg(4 * target + 1), q_mask(v1_));
    } else {
      flt(fmt::format("f16tof8 {}, {}, {}, {}", pair(4 * target), quad(v0_), format, to.scale), a_pair(4 * target),
          q_mask(v0_));
    }
  }

  // Rounds the value to `to` and keeps computing on the rounded value.
  void round_to(StorageType to) {
    if (to == current_) return;
    current_ = to;
    if (to.element == ElementType::F32) return;
    const char* format = fp8_name(to.element);
    if (f32_ && !needs_f32_later_) {
      // Narrow: rounded once from FP32, then held in FP16 lanes (FP8 values
      // of the scales in use are exact in FP16).
      if (is_fp8(to.element)) {
        const int target = rounded_quad();
        to_fp8(to, target);
        flt(fmt::format("f8tof16 {0}, {1}, {2}, {3}", quad(target), pair(4 * target), format, to.scale),
            q_mask(target), a_pair(4 * target));
        take_rounded(target);
        f32_ = false;
      } else {
        narrow_to_f16();
      }
      return;
    }
    if (f32_) {
      // Rounded and widened back to FP32 lanes.
      const int target = rounded_quad();
      if (to.element == ElementType::F16) {
        round_to_f16(target);
        flt(fmt::format("f16tof32hi {}, {}", quad(v1_), quad(target)), q_mask(v1_), q_mask(target));
        flt(fmt::format("f16tof32lo {}, {}", quad(v0_), quad(target)), q_mask(v0_), q_mask(target));
      } else {
        to_fp8(to, target);
        flt(fmt::format("f8tof32 {}, {}, {}, {}", quad(v1_), single(4 * target + 1), format, to.scale), q_mask(v1_),
            a_reg(4 * target + 1));
        flt(fmt::format("f8tof32 {}, {}, {}, {}", quad(v0_), single(4 * target), format, to.scale), q_mask(v0_),
            a_reg(4 * target));
      }
      return;
    }
    if (is_fp8(to.element)) {
      const int target = rounded_quad();
      to_fp8(to, target);
      flt(fmt::format("f8tof16 {}, {}, {}, {}", quad(target), pair(4 * target), format, to.scale), q_mask(target),
          a_pair(4 * target));
      take_rounded(target);
    }
  }

  void add_bias() {
    bias_in_f32_lanes_ = f32_;
    current_ = lanes_type();
    if (f32_) {
      for (int q : {v0_, v1_})
        flt(fmt::format("f32v4adds {0}, {0}, $a{1}", quad(q), 4 * kBiasQuad), q_mask(q),
            q_mask(q) | a_reg(4 * kBiasQuad));
    } else {
      flt(fmt::format("f16v8add {0}, {0}, {1}", quad(v0_), quad(kBiasQuad)), q_mask(v0_),
          q_mask(v0_) | q_mask(kBiasQuad));
    }
  }

  void apply_gelu(int mode) {
    current_ = lanes_type();
    if (f32_) {
      for (int q : {v0_, v1_}) flt(fmt::format("f32v4gelu {0}, {0}, {1}", quad(q), mode), q_mask(q), q_mask(q));
    } else {
      for (int first : {4 * v0_, 4 * v0_ + 2})
        flt(fmt::format("f16v4gelu {0}, {0}, {1}", pair(first), mode), a_pair(first), a_pair(first));
    }
  }

  void store(StorageType out) {
    const RegisterMask p = m_reg(kOutputPointer);
    auto store_op = [&](const char* op, const std::string& source, RegisterMask read, int step) {
      emit(Slot::Main, fmt::format("{} {}, $m{}, {}", op, source, kOutputPointer, step), p, read | p);
    };
    if (out.element == ElementType::F32) {
      TILEC_CHECK(f32_, "combine kernel storing FP32 from FP16 lanes");
      store_op("st128pi", quad(v0_), q_mask(v0_), 16);
      store_op("st128pi", quad(v1_), q_mask(v1_), 16);
    } else if (out.element == ElementType::F16) {
      if (f32_) narrow_to_f16();
      store_op("st128pi", quad(v0_), q_mask(v0_), 16);
    } else {
      const int target = rounded_quad();
      to_fp8(out, target);
      store_op("st64pi", pair(4 * target), a_pair(4 * target), 8);
    }
  }

  const CombineVariant& v_;
  bool needs_f32_later_ = false;
  bool f32_at_start_ = false;
  bool bias_in_f32_lanes_ = false;
  // The group being written: its lanes and registers.
  bool f32_ = false;
  StorageType current_;
  int v0_ = 0, v1_ = 0, t0_ = 0, t1_ = 0;
  int spare_ = -1;  // a free quad for rounded results, or -1
  std::vector<KernelOp> ops_;
};

// The generated kernel, as bundle lines in its parts.
struct CombineCode {
  CombineShape shape;
  std::vector<std::string> entry, column_setup, prologue, body, epilogue;
};

CombineCode build(const CombineVariant& variant) {
  CombineWriter writer(variant);
  CombineCode code;
  // Iterations per loop: at least 2 groups of 8 per column (whole panels),
  // so one group per iteration allows 3 stages, two groups 2.
  std::optional<ModuloSchedule> best;
  CombineLayout chosen;
  for (CombineLayout layout : {CombineLayout{1, false}, CombineLayout{1, true}, CombineLayout{2, false},
                               CombineLayout{2, true}}) {
    if (!writer.fits(layout)) continue;
    std::optional<ModuloSchedule> schedule = modulo_schedule(writer.body(layout), layout.unroll == 1 ? 3 : 2);
    if (schedule && (!best || schedule->interval * chosen.unroll < best->interval * layout.unroll)) {
      best = std::move(schedule);
      chosen = layout;
    }
  }
  CombineShape& shape = code.shape;
  shape.per_column = writer.has_bias();
  for (const KernelOp& op : writer.body(CombineLayout{})) (op.slot == Slot::Main ? shape.main_ops : shape.float_ops) += 1;
  if (best) {
    shape.unroll = chosen.unroll;
    shape.interval = best->interval;
    shape.stages = best->stages;
    code.prologue = std::move(best->prologue);
    code.body = std::move(best->body);
    code.epilogue = std::move(best->epilogue);
  } else {
    shape.pipelined = false;
    code.body = sequential_body(writer.body(CombineLayout{}));
    shape.interval = static_cast<int>(code.body.size());
  }
  writer.body(chosen);  // the bias lanes follow the writer's last body
  code.column_setup = writer.column_setup();

  code.entry = {"ldw $m2, $m0, 0", "ldw $m3, $m0, 4", fmt::format("ldw $m{}, $m0, 8", kOutputPointer)};
  if (shape.per_column) code.entry.push_back(fmt::format("ldw $m{}, $m0, 12", kBiasPointer));
  for (int i = 0; i < variant.inputs; ++i)
    code.entry.push_back(fmt::format("ldw $m{}, $m0, {}", kFirstInputPointer + i, 16 + 4 * i));
  code.entry.push_back("brz $m2, {name}_done");
  if (!shape.per_column) code.entry.push_back("mul $m3, $m3, $m2");
  if (shape.unroll == 2) code.entry.push_back("shri $m3, $m3, 1");
  if (shape.stages > 1) code.entry.push_back(fmt::format("addi $m3, $m3, {}", 1 - shape.stages));

  shape.prologue = static_cast<int>(code.prologue.size());
  shape.epilogue = static_cast<int>(code.epilogue.size());
  shape.entry = static_cast<int>(code.entry.size());
  shape.column_setup = static_cast<int>(code.column_setup.size()) + 1;  // and the rpt
  shape.column_end = shape.per_column ? 2 : 0;
  return code;
}

}  // namespace

CombineShape combine_shape(const CombineVariant& variant) { return build(variant).shape; }

std::string combine_source(const std::string& name, const CombineVariant& variant) {
  TILEC_CHECK(variant.inputs >= 1 && variant.inputs <= kMaxCombineInputs, "combine kernel with {} inputs",
              variant.inputs);
  const CombineCode code = build(variant);
  std::string text = fmt::format(".section .kernels, \"x\"\n.global {0}\n.type {0}, @kernel\n{0}:\n", name);
  auto lines = [&text, &name](const std::vector<std::string>& bundles) {
    for (const std::string& line : bundles) {
      std::string resolved = line;
      if (auto at = resolved.find("{name}"); at != std::string::npos) resolved.replace(at, 6, name);
      text += "    " + resolved + "\n";
    }
  };
  lines(code.entry);
  if (code.shape.per_column) text += name + "_column:\n";
  lines(code.column_setup);
  lines(code.prologue);
  text += fmt::format("    rpt $m3, {}\n", code.body.size());
  lines(code.body);
  lines(code.epilogue);
  if (code.shape.per_column) text += fmt::format("    addi $m2, $m2, -1\n    brnz $m2, {}_column\n", name);
  text += fmt::format("{0}_done:\n    exit\n.size {0}, . - {0}\n", name);
  return text;
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Whole columns leave some worker one more than another, and more than one.
bool uneven(std::int64_t columns, std::int64_t column_elements) {
  return columns > kWorkers && columns % kWorkers != 0 && column_elements % 16 == 0;
}

}  // namespace

bool combine_loops_per_column(const CombineVariant& variant) {
  return std::any_of(variant.stages.begin(), variant.stages.end(),
                     [](const CombineStage& stage) { return stage.kind == EpilogueOp::Kind::AddBias; });
}

CombineShares combine_shares(const CombineVariant& variant, std::int64_t columns, std::int64_t column_elements,
                             bool rows_split) {
  CombineShares shares{};
  if (rows_split) {
    // Worker w takes column w x columns / 6; the workers on a column share
    // its panels.
    const std::int64_t panels = column_elements / 16;
    for (std::int64_t worker = 0; worker < kWorkers; ++worker) {
      const std::int64_t column = worker * columns / kWorkers;
      const std::int64_t first_worker = ceil_div(column * kWorkers, columns);
      const std::int64_t on_column = ceil_div((column + 1) * kWorkers, columns) - first_worker;
      const std::int64_t index = worker - first_worker;
      const std::int64_t first = panels * index / on_column, last = panels * (index + 1) / on_column;
      if (first == last) continue;
      shares[worker] = CombineShare{1, 2 * (last - first), column * column_elements + 16 * first, column};
    }
    return shares;
  }
  const bool panels = !combine_loops_per_column(variant) && uneven(columns, column_elements);
  const std::int64_t units = panels ? columns * (column_elements / 16) : columns;
  const std::int64_t unit_elements = panels ? 16 : column_elements;
  for (std::int64_t worker = 0; worker < kWorkers; ++worker) {
    const std::int64_t first = units * worker / kWorkers, last = units * (worker + 1) / kWorkers;
    if (first == last) continue;
    shares[worker] = CombineShare{last - first, unit_elements / 8, first * unit_elements, first};
  }
  return shares;
}

std::int64_t combine_worker_bundles(const CombineShape& shape, std::int64_t columns, std::int64_t groups) {
  if (columns <= 0) return 0;
  const std::int64_t iterations = (shape.per_column ? groups : columns * groups) / shape.unroll;
  const std::int64_t loop =
      shape.column_setup + shape.prologue + (iterations - (shape.stages - 1)) * shape.interval + shape.epilogue;
  if (shape.per_column) return shape.entry + columns * (loop + shape.column_end) + shape.exit;
  return shape.entry + loop + shape.exit;
}

}  // namespace tilec::compiler
