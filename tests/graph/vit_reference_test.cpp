// The host reference of the small `vit` tower at FP32 against the model
// computed here from its definition (../shared/siglip-vit.md), in double
// precision with plain loops: patch embedding, encoder layers, post-
// layernorm and the MAP head.
#include "graph/reference.h"
#include "graph/vit_workload.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tilec::graph {
namespace {

// A row-major matrix of doubles.
struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;

  Matrix(std::int64_t r, std::int64_t c) : rows(r), cols(c), v(static_cast<std::size_t>(r * c)) {}
  double& at(std::int64_t r, std::int64_t c) { return v[static_cast<std::size_t>(r * cols + c)]; }
  double at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

class Model {
 public:
  Model(const TensorMap& data, std::int64_t layers) : data_(data), layers_(layers) {}

  // One batch item's image [H, W, C] -> tokens [T, width] after the post-layernorm.
  Matrix tokens(std::int64_t item) const {
    const VitDimensions& d = kSmallVit;
    const std::int64_t across = d.image / d.patch, patch_size = d.patch * d.patch * d.channels;
    Matrix patches(across * across, patch_size);
    const std::vector<float> image = data_.at("image").to_floats();
    for (std::int64_t py = 0; py < across; ++py)
      for (std::int64_t px = 0; px < across; ++px)
        for (std::int64_t i = 0; i < d.patch; ++i)
          for (std::int64_t j = 0; j < d.patch; ++j)
            for (std::int64_t c = 0; c < d.channels; ++c)
              patches.at(py * across + px, (i * d.patch + j) * d.channels + c) =
                  image[static_cast<std::size_t>(((item * d.image + py * d.patch + i) * d.image + px * d.patch + j) *
                                                     d.channels + c)];
    Matrix x = linear(patches, "patch_W", "patch_b");
    const Matrix position = parameter("position", 0, x.rows, x.cols);
    for (std::size_t i = 0; i < x.v.size(); ++i) x.v[i] += position.v[i];
    for (std::int64_t l = 0; l < layers_; ++l) x = layer(x, l);
    return layernorm(x, "post_gamma", "post_beta");
  }

  // The MAP head on one item's tokens: [width].
  std::vector<double> embedding(const Matrix& tokens) const {
    const std::int64_t width = tokens.cols;
    const Matrix q = linear(parameter("probe", 0, 1, width), "head_Wq", "head_bq");
    const Matrix pooled = attention(q, linear(tokens, "head_Wk", "head_bk"), linear(tokens, "head_Wv", "head_bv"));
    Matrix y = linear(pooled, "head_Wo", "head_bo");
    const Matrix mlp = this->mlp(layernorm(y, "head_ln_gamma", "head_ln_beta"), "head_", 0);
    for (std::size_t i = 0; i < y.v.size(); ++i) y.v[i] += mlp.v[i];
    return y.v;
  }

 private:
  // Slice `layer` of parameter `name`, viewed as [rows, cols].
  Matrix parameter(const std::string& name, std::int64_t layer, std::int64_t rows, std::int64_t cols) const {
    const std::vector<float> values = data_.at(name).to_floats();
    Matrix m(rows, cols);
    for (std::size_t i = 0; i < m.v.size(); ++i) m.v[i] = values[static_cast<std::size_t>(layer * rows * cols) + i];
    return m;
  }

  std::int64_t columns_of(const std::string& weight) const { return data_.at(weight).type.shape.back(); }

  Matrix linear(const Matrix& x, const std::string& weight, const std::string& bias, std::int64_t layer = 0) const {
    const Matrix w = parameter(weight, layer, x.cols, columns_of(weight));
    const Matrix b = parameter(bias, layer, 1, w.cols);
    Matrix y(x.rows, w.cols);
    for (std::int64_t r = 0; r < x.rows; ++r)
      for (std::int64_t c = 0; c < w.cols; ++c) {
        double sum = b.at(0, c);
        for (std::int64_t k = 0; k < x.cols; ++k) sum += x.at(r, k) * w.at(k, c);
        y.at(r, c) = sum;
      }
    return y;
  }

  Matrix layernorm(const Matrix& x, const std::string& gamma, const std::string& beta, std::int64_t layer = 0) const {
    const Matrix g = parameter(gamma, layer, 1, x.cols), b = parameter(beta, layer, 1, x.cols);
    Matrix y(x.rows, x.cols);
    for (std::int64_t r = 0; r < x.rows; ++r) {
      double mean = 0, variance = 0;
      for (std::int64_t c = 0; c < x.cols; ++c) mean += x.at(r, c) / static_cast<double>(x.cols);
      for (std::int64_t c = 0; c < x.cols; ++c) variance += std::pow(x.at(r, c) - mean, 2) / static_cast<double>(x.cols);
      for (std::int64_t c = 0; c < x.cols; ++c)
        y.at(r, c) = (x.at(r, c) - mean) / std::sqrt(variance + 1e-6) * g.at(0, c) + b.at(0, c);
    }
    return y;
  }

  // softmax(q_h k_h^T / sqrt(D/H)) v_h for each head h of kSmallVit.heads.
  static Matrix attention(const Matrix& q, const Matrix& k, const Matrix& v) {
    const std::int64_t heads = kSmallVit.heads, dh = q.cols / heads;
    Matrix out(q.rows, v.cols);
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t s = 0; s < q.rows; ++s) {
        std::vector<double> weights(static_cast<std::size_t>(k.rows));
        double total = 0;
        for (std::int64_t t = 0; t < k.rows; ++t) {
          double score = 0;
          for (std::int64_t e = 0; e < dh; ++e) score += q.at(s, h * dh + e) * k.at(t, h * dh + e);
          weights[static_cast<std::size_t>(t)] = std::exp(score / std::sqrt(static_cast<double>(dh)));
          total += weights[static_cast<std::size_t>(t)];
        }
        for (std::int64_t t = 0; t < k.rows; ++t)
          for (std::int64_t e = 0; e < dh; ++e)
            out.at(s, h * dh + e) += weights[static_cast<std::size_t>(t)] / total * v.at(t, h * dh + e);
      }
    return out;
  }

  Matrix mlp(const Matrix& x, const std::string& prefix, std::int64_t layer) const {
    Matrix h = linear(x, prefix + "W1", prefix + "b1", layer);
    for (double& value : h.v)
      value = 0.5 * value * (1 + std::tanh(std::sqrt(2 / M_PI) * (value + 0.044715 * value * value * value)));
    return linear(h, prefix + "W2", prefix + "b2", layer);
  }

  Matrix layer(const Matrix& x, std::int64_t l) const {
    const Matrix ln1 = layernorm(x, "ln1_gamma", "ln1_beta", l);
    Matrix attended = linear(attention(linear(ln1, "Wq", "bq", l), linear(ln1, "Wk", "bk", l), linear(ln1, "Wv", "bv", l)),
                             "Wo", "bo", l);
    for (std::size_t i = 0; i < attended.v.size(); ++i) attended.v[i] += x.v[i];
    Matrix out = mlp(layernorm(attended, "ln2_gamma", "ln2_beta", l), "", l);
    for (std::size_t i = 0; i < out.v.size(); ++i) out.v[i] += attended.v[i];
    return out;
  }

  const TensorMap& data_;
  std::int64_t layers_;
};

TEST(VitReference, SmallTowerMatchesTheModelWrittenOut) {
  const std::int64_t batch = 2, layers = 2, width = kSmallVit.width, tokens = 16;
  for (bool head : {false, true}) {
    const Workload workload =
        make_workload("vit", {.batch = batch, .precision = Precision::Fp32, .layers = layers, .head = head});
    const TensorMap data = generate_data(workload.graph, 6, workload.data_rules);
    const ReferenceResult result = run_reference(workload.graph, data);
    const Model model(data, layers);
    for (std::int64_t item = 0; item < batch; ++item) {
      const Matrix expected = model.tokens(item);
      if (!head) {
        const Tensor& out = result.outputs.at("tokens");
        ASSERT_EQ(out.type.shape, (Shape{batch, tokens, width}));
        for (std::int64_t i = 0; i < tokens * width; ++i)
          ASSERT_NEAR(out.at(item * tokens * width + i), expected.v[static_cast<std::size_t>(i)], 2e-5) << item << " " << i;
        continue;
      }
      const Tensor& out = result.outputs.at("embedding");
      ASSERT_EQ(out.type.shape, (Shape{batch, width}));
      const std::vector<double> embedding = model.embedding(expected);
      for (std::int64_t e = 0; e < width; ++e)
        EXPECT_NEAR(out.at(item * width + e), embedding[static_cast<std::size_t>(e)], 2e-5) << item << " " << e;
    }
  }
}

}  // namespace
}  // namespace tilec::graph
