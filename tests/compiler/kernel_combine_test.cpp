// The combine kernels (sum of partial inputs, then bias, GELU and casts) on
// one simulated tile, bit for bit against a host model of the lanes they
// compute in (docs/kernels.md, "Combine kernels").
#include "compiler/combine_kernel.h"
#include "kernel_harness.h"
#include "numerics/fp16.h"
#include "numerics/fp8.h"
#include "numerics/reference_ops.h"

#include <gtest/gtest.h>

#include <random>

namespace tilec::compiler {
namespace {

using testing::DataPlaces;
using testing::KernelHarness;
using testing::KernelResult;
using testing::KernelRun;

using Kind = EpilogueOp::Kind;

constexpr StorageType kF32{ElementType::F32, 0};
constexpr StorageType kF16{ElementType::F16, 0};

CombineStage bias(StorageType result) { return CombineStage{Kind::AddBias, graph::GeluApproximation::Tanh, result}; }
CombineStage gelu(StorageType result, graph::GeluApproximation approximation = graph::GeluApproximation::Tanh) {
  return CombineStage{Kind::Gelu, approximation, result};
}
CombineStage cast(StorageType result) { return CombineStage{Kind::Cast, graph::GeluApproximation::Tanh, result}; }

CombineVariant variant_of(int inputs, StorageType input, StorageType sum, std::vector<CombineStage> stages = {},
                          ElementType bias_type = ElementType::F32) {
  CombineVariant variant;
  variant.inputs = inputs;
  variant.input = input;
  variant.sum = sum;
  variant.bias = bias_type;
  variant.stages = std::move(stages);
  return variant;
}

std::string describe(const CombineVariant& v) {
  auto type = [](StorageType t) {
    return is_fp8(t.element) ? fmt::format("{}s{}", element_type_name(t.element), t.scale)
                             : std::string(element_type_name(t.element));
  };
  std::string text = fmt::format("{}x{} sum {}", v.inputs, type(v.input), type(v.sum));
  for (const CombineStage& stage : v.stages) {
    const char* what = stage.kind == Kind::AddBias ? "bias" : stage.kind == Kind::Gelu ? "gelu" : "cast";
    text += fmt::format(" {}->{}", what, type(stage.result));
  }
  return text;
}

// ---- the host model ----

// Stored bytes of one element <-> its value.
float decode(const std::uint8_t* bytes, StorageType type) {
  switch (type.element) {
    case ElementType::F32: {
      float value;
      std::memcpy(&value, bytes, 4);
      return value;
    }
    case ElementType::F16: return half_to_float(static_cast<std::uint16_t>(bytes[0] | bytes[1] << 8));
    default: return fp8_to_float(bytes[0], type.element, type.scale);
  }
}

void encode(float value, StorageType type, std::uint8_t* bytes) {
  switch (type.element) {
    case ElementType::F32: std::memcpy(bytes, &value, 4); return;
    case ElementType::F16: {
      std::uint16_t half = float_to_half(value);
      bytes[0] = static_cast<std::uint8_t>(half);
      bytes[1] = static_cast<std::uint8_t>(half >> 8);
      return;
    }
    default: bytes[0] = float_to_fp8(value, type.element, type.scale); return;
  }
}

// The lanes a combine kernel computes in: FP32 while anything needs FP32,
// FP16 once the value is rounded to 16 bits or fewer and nothing later
// needs FP32 (each FP16 operation rounds to FP16).
class CombineModel {
 public:
  explicit CombineModel(const CombineVariant& v) : v_(v) {
    bool later_f32 = false;
    for (const CombineStage& stage : v.stages) {
      later_f32 |= stage.result.element == ElementType::F32;
      if (stage.kind == Kind::AddBias) later_f32 |= v.bias == ElementType::F32;
    }
    needs_f32_later_ = later_f32;
  }

  float element(const std::vector<float>& inputs, float bias_value) {
    f32_lanes_ = v_.input.element == ElementType::F32 || v_.sum.element == ElementType::F32 || needs_f32_later_;
    float value = lane(inputs[0]);
    for (std::size_t i = 1; i < inputs.size(); ++i) value = f32_lanes_ ? value + inputs[i] : round_to_half(value + lane(inputs[i]));
    if (!v_.stages.empty()) value = round(value, v_.sum);
    for (std::size_t i = 0; i < v_.stages.size(); ++i) {
      const CombineStage& stage = v_.stages[i];
      if (stage.kind == Kind::AddBias) value = f32_lanes_ ? value + bias_value : round_to_half(value + bias_value);
      if (stage.kind == Kind::Gelu) {
        float g = stage.approximation == graph::GeluApproximation::Erf ? reference::gelu_erf(value)
                                                                        : reference::gelu_tanh(value);
        value = f32_lanes_ ? g : round_to_half(g);
      }
      if (i + 1 < v_.stages.size()) value = round(value, stage.result);
    }
    return value;  // the store rounds it to the output type
  }

 private:
  float lane(float value) const { return f32_lanes_ ? value : round_to_half(value); }

  float round(float value, StorageType to) {
    if (to.element == ElementType::F32) return value;
    if (f32_lanes_ && !needs_f32_later_) f32_lanes_ = false;  // narrows to FP16 lanes
    float rounded = round_to_storage(value, to);
    return f32_lanes_ ? rounded : round_to_half(rounded);
  }

  const CombineVariant& v_;
  bool needs_f32_later_ = false;
  bool f32_lanes_ = true;
};

// ---- running a variant ----

std::vector<std::uint8_t> random_elements(StorageType type, std::size_t count, std::mt19937& random) {
  std::vector<std::uint8_t> bytes(count * element_bytes(type.element));
  std::normal_distribution<float> normal(0.0f, 1.5f);
  for (std::size_t i = 0; i < count; ++i) {
    if (is_fp8(type.element)) {
      auto code = static_cast<std::uint8_t>(random());
      bytes[i] = code == 0x80 ? 0 : code;
    } else {
      encode(normal(random), type, bytes.data() + i * element_bytes(type.element));
    }
  }
  return bytes;
}

struct CombineOutcome {
  int mismatches = 0;
  KernelResult result;
  std::string kernel;
};

// `columns` columns of `panels` x 16 elements on `workers` workers, split
// by columns as plan_kernels splits them.
CombineOutcome run_combine(const CombineVariant& v, std::uint32_t columns, std::uint32_t panels, int workers = 6,
                           std::uint32_t seed = 1) {
  KernelLibrary library;
  CombineOutcome outcome;
  outcome.kernel = library.combine(v);
  KernelHarness harness(library);
  const std::uint32_t column_elements = 16 * panels, elements = columns * column_elements;
  const std::uint32_t in_bytes = element_bytes(v.input.element), out_bytes = element_bytes(v.output().element);
  std::mt19937 random(seed);
  DataPlaces places;
  KernelRun run{outcome.kernel, {}, {}, {}};
  std::vector<std::vector<std::uint8_t>> inputs;
  std::vector<std::uint32_t> input_addresses;
  for (int i = 0; i < v.inputs; ++i) {
    inputs.push_back(random_elements(v.input, elements, random));
    input_addresses.push_back(places.take(elements * in_bytes));
    run.inputs.push_back({input_addresses.back(), inputs.back()});
  }
  // One word per column; an FP16 bias fills both halves of its word.
  std::vector<float> bias_values(columns);
  std::vector<std::uint32_t> bias_words(columns);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::uint32_t c = 0; c < columns; ++c) {
    if (v.bias == ElementType::F16) {
      std::uint16_t half = float_to_half(normal(random));
      bias_values[c] = half_to_float(half);
      bias_words[c] = half | std::uint32_t{half} << 16;
    } else {
      bias_values[c] = normal(random);
      std::memcpy(&bias_words[c], &bias_values[c], 4);
    }
  }
  std::uint32_t bias_address = places.take(columns * 4);
  run.inputs.push_back({bias_address, testing::bytes_of(bias_words)});
  std::uint32_t out_address = places.take(elements * out_bytes);
  run.outputs.push_back({out_address, elements * out_bytes});

  for (int worker = 0; worker < workers; ++worker) {
    std::uint32_t first = columns * worker / workers, last = columns * (worker + 1) / workers;
    if (first == last) continue;
    std::vector<std::uint32_t> block{last - first, column_elements / 8, out_address + first * column_elements * out_bytes,
                                     bias_address + first * 4};
    for (std::uint32_t address : input_addresses) block.push_back(address + first * column_elements * in_bytes);
    run.blocks.push_back(std::move(block));
  }
  outcome.result = harness.run(run);

  CombineModel model(v);
  std::vector<float> values(static_cast<std::size_t>(v.inputs));
  const std::vector<std::uint8_t>& out = outcome.result.outputs[0];
  for (std::uint32_t e = 0; e < elements; ++e) {
    for (int i = 0; i < v.inputs; ++i) values[static_cast<std::size_t>(i)] = decode(inputs[static_cast<std::size_t>(i)].data() + e * in_bytes, v.input);
    std::uint8_t expected[4] = {};
    encode(model.element(values, bias_values[e / column_elements]), v.output(), expected);
    if (std::memcmp(expected, out.data() + e * out_bytes, out_bytes) != 0 && ++outcome.mismatches <= 3)
      ADD_FAILURE() << describe(v) << ": element " << e << " is " << decode(out.data() + e * out_bytes, v.output())
                    << ", expected " << decode(expected, v.output());
  }
  return outcome;
}

void expect_matches(const CombineVariant& v, std::uint32_t columns = 5, std::uint32_t panels = 3, int workers = 6) {
  CombineOutcome outcome = run_combine(v, columns, panels, workers);
  EXPECT_EQ(outcome.mismatches, 0) << describe(v);
}

TEST(CombineKernel, SumsOneToEightPartials) {
  for (int inputs = 1; inputs <= kMaxCombineInputs; ++inputs) {
    expect_matches(variant_of(inputs, kF32, kF32));
    expect_matches(variant_of(inputs, kF32, kF16));
    expect_matches(variant_of(inputs, kF16, kF16));
    expect_matches(variant_of(inputs, kF16, kF32));
  }
}

TEST(CombineKernel, AddsAnF16OrF32Bias) {
  for (ElementType bias_type : {ElementType::F16, ElementType::F32}) {
    expect_matches(variant_of(1, kF32, kF32, {bias(kF32)}, bias_type));
    expect_matches(variant_of(2, kF32, kF16, {bias(kF16)}, bias_type));
    expect_matches(variant_of(3, kF16, kF16, {bias(kF16)}, bias_type));
    expect_matches(variant_of(2, kF32, kF16, {bias(kF16), gelu(kF16)}, bias_type));
    expect_matches(variant_of(1, kF32, kF32, {bias(kF32), gelu(kF32)}, bias_type));
  }
}

TEST(CombineKernel, AppliesGeluTanhAndErf) {
  for (auto approximation : {graph::GeluApproximation::Tanh, graph::GeluApproximation::Erf}) {
    expect_matches(variant_of(1, kF32, kF32, {gelu(kF32, approximation)}));
    expect_matches(variant_of(1, kF32, kF16, {gelu(kF16, approximation)}));
    expect_matches(variant_of(2, kF16, kF16, {gelu(kF16, approximation)}));
    expect_matches(variant_of(1, kF16, kF16, {gelu(kF32, approximation)}));
    expect_matches(variant_of(1, kF32, kF16, {gelu(kF16, approximation), cast({ElementType::F143, -4})}));
    expect_matches(variant_of(3, kF32, kF16, {gelu(kF16, approximation), cast({ElementType::F152, 2})}));
  }
}

TEST(CombineKernel, CastsBetweenWideTypesAndFp8WithScales) {
  for (ElementType fp8 : {ElementType::F143, ElementType::F152}) {
    for (int scale : {-5, 0, 3}) {
      StorageType narrow{fp8, scale};
      expect_matches(variant_of(1, kF32, kF32, {cast(narrow)}));
      expect_matches(variant_of(1, kF16, kF16, {cast(narrow)}));
      expect_matches(variant_of(1, narrow, narrow, {cast(kF32)}));
      expect_matches(variant_of(1, narrow, narrow, {cast(kF16)}));
      expect_matches(variant_of(1, kF32, narrow));
      expect_matches(variant_of(1, kF16, narrow));
      expect_matches(variant_of(2, kF32, narrow, {gelu(kF16)}));
      expect_matches(variant_of(1, narrow, narrow, {cast({fp8 == ElementType::F143 ? ElementType::F152 : ElementType::F143, scale + 1})}));
    }
  }
}

TEST(CombineKernel, AddsTwoActivations) {
  expect_matches(variant_of(2, kF16, kF16));
  expect_matches(variant_of(2, kF32, kF32));
  for (ElementType fp8 : {ElementType::F143, ElementType::F152}) {
    StorageType narrow{fp8, -2};
    expect_matches(variant_of(2, narrow, narrow));
    expect_matches(variant_of(2, narrow, kF16));
    expect_matches(variant_of(2, narrow, kF32));
    expect_matches(variant_of(2, narrow, kF16, {gelu(kF16)}));
  }
}

TEST(CombineKernel, SharesColumnsBetweenAnyNumberOfWorkers) {
  const CombineVariant v = variant_of(2, kF32, kF16, {gelu(kF16), cast({ElementType::F143, -3})});
  for (int workers = 1; workers <= 6; ++workers) expect_matches(v, 7, 2, workers);
  expect_matches(v, 1, 1, 1);
  expect_matches(v, 3, 5, 6);  // three workers idle
}

TEST(CombineKernel, LongColumnsRunAtTheBusierSlotsRate) {
  // The analytic ideal: one bundle per instruction of the busier slot, per
  // group of 8 elements, on the busiest worker (2 columns of 48 groups).
  const std::vector<CombineVariant> variants{
      variant_of(1, kF32, kF16), variant_of(1, kF32, kF16, {gelu(kF16), cast({ElementType::F143, -4})}),
      variant_of(3, kF32, kF16), variant_of(2, {ElementType::F143, -1}, kF16),
      variant_of(2, kF16, kF16, {bias(kF16)}, ElementType::F16)};
  for (const CombineVariant& v : variants) {
    CombineOutcome outcome = run_combine(v, 12, 24);
    EXPECT_EQ(outcome.mismatches, 0);
    const CombineShape shape = combine_shape(v);
    const double ideal = 6.0 * shape.ideal_bundles_per_8() * 2 * 48;
    const double cycles = static_cast<double>(outcome.result.kernel_cycles);
    std::cerr << describe(v) << ": " << shape.bundles_per_8() << " bundles per 8 (bound " << shape.ideal_bundles_per_8()
              << "), " << outcome.result.kernel_cycles << " cycles, " << ideal / cycles << " of the ideal\n";
    EXPECT_GT(ideal / cycles, 0.85) << describe(v);
    EXPECT_LE(ideal / cycles, 1.0) << describe(v);
  }
}

}  // namespace
}  // namespace tilec::compiler
