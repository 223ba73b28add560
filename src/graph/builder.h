// GraphBuilder: constructs a valid Graph op by op, inferring every result's
// shape (graph/shape_inference.h) and returning the ids of the new values.
//
// Conventions it enforces, which the JSON format relies on:
// - names are letters, digits, '_', '-' and '.', not starting with '-' or
//   '.'; op names are unique within their graph and so are output names;
// - a value is named after its op; a repeat with several carried values
//   names its k-th result "NAME#k";
// - inputs come first, then parameters, then every other op;
// - only the top-level graph has inputs, parameters and named outputs; a
//   repeat body's outputs are the next values of its carried arguments.
// Every mistake throws BadInput "op 'NAME': ..." naming the operands and
// their shapes.
#pragma once

#include "graph/graph.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::graph {

// True for names the builder accepts (see above).
bool is_valid_name(std::string_view name);

class GraphBuilder {
 public:
  GraphBuilder() = default;

  ValueId input(const std::string& name, const TensorType& type);
  ValueId parameter(const std::string& name, const TensorType& type);

  // A[..., M, K] x B[..., K, N] -> [..., M, N] stored as `result`; a
  // transposed operand is stored with its last two axes swapped.
  ValueId gemm(const std::string& name, ValueId a, ValueId b, StorageType result,
               bool transpose_a = false, bool transpose_b = false);
  // Results of the ops below are stored like their first operand unless
  // `result` says otherwise.
  ValueId gelu(const std::string& name, ValueId x,
               GeluApproximation approximation = GeluApproximation::Tanh,
               std::optional<StorageType> result = {});
  ValueId add(const std::string& name, ValueId a, ValueId b,
              std::optional<StorageType> result = {});
  ValueId cast(const std::string& name, ValueId x, StorageType result);
  // Over the last axis of x; gamma and beta have shape [W].
  ValueId layernorm(const std::string& name, ValueId x, ValueId gamma, ValueId beta,
                    float epsilon = 1e-6f, std::optional<StorageType> result = {});
  ValueId softmax(const std::string& name, ValueId x, int axis = -1,
                  std::optional<StorageType> result = {});
  // q [..., S, D], k [..., T, D], v [..., T, E] -> [..., S, E]; scale 0 =
  // 1/sqrt(D / heads). Head h attends with columns [h D/H, (h+1) D/H) of q
  // and k and writes columns [h E/H, (h+1) E/H) from those of v.
  ValueId attention(const std::string& name, ValueId q, ValueId k, ValueId v, float scale = 0.0f,
                    std::optional<StorageType> result = {}, std::int64_t heads = 1);

  // x [..., H, W, C] -> [..., (H/p)(W/p), p*p*C] (divisions rounded down):
  // row py*(W/p)+px is patch (py, px), and its column (i*p + j)*C + c holds
  // pixel (py*p+i, px*p+j, c). As in a convolution of stride p without
  // padding, the last H mod p rows and W mod p columns are left out.
  ValueId patchify(const std::string& name, ValueId x, std::int64_t patch,
                   std::optional<StorageType> result = {});
  // x's elements, row-major, in `shape` (one extent may be -1, as in NumPy;
  // the op records the resolved shape).
  ValueId reshape(const std::string& name, ValueId x, Shape shape, std::optional<StorageType> result = {});

  // sub, mul, div, pow (and add): a op b with NumPy broadcasting.
  ValueId binary(OpKind kind, const std::string& name, ValueId a, ValueId b,
                 std::optional<StorageType> result = {});
  // sqrt, erf, tanh, relu, sigmoid, exp.
  ValueId unary(OpKind kind, const std::string& name, ValueId x, std::optional<StorageType> result = {});
  // reduce_mean, reduce_sum, reduce_max over `axes` (negative counts from
  // the end; the op records them non-negative and ascending).
  ValueId reduce(OpKind kind, const std::string& name, ValueId x, std::vector<std::int64_t> axes,
                 bool keep_dims = true, std::optional<StorageType> result = {});
  // Result axis i is x's axis permutation[i].
  ValueId transpose(const std::string& name, ValueId x, std::vector<std::int64_t> permutation,
                    std::optional<StorageType> result = {});
  // The operands joined along `axis`; stored like the first.
  ValueId concat(const std::string& name, const std::vector<ValueId>& operands, int axis,
                 std::optional<StorageType> result = {});
  // See Op::starts: one start, end and step per axis of x.
  ValueId slice(const std::string& name, ValueId x, std::vector<std::int64_t> starts, std::vector<std::int64_t> ends,
                std::vector<std::int64_t> steps, std::optional<StorageType> result = {});
  // Slices of x along `axis` picked by constant indices (row-major in
  // indices_shape) -> x.shape[:axis] + indices_shape + x.shape[axis+1:].
  ValueId gather(const std::string& name, ValueId x, int axis, std::vector<std::int64_t> indices,
                 Shape indices_shape, std::optional<StorageType> result = {});
  // Any single-result op with its kind, operands and attributes set, stored
  // as `result` (or like its first operand): the way in for translators
  // that hold ops already formed (the ONNX importer).
  ValueId apply(Op op, std::optional<StorageType> result = {});

  struct RepeatOperands {
    std::vector<ValueId> carried{};
    std::vector<ValueId> sequence{};   // leading axis == count
    std::vector<ValueId> invariant{};
    // Names of the body's arguments in the order carried, sequence,
    // invariant; empty = the operands' own names.
    std::vector<std::string> argument_names{};
  };
  // Builds the body on `body`, whose `arguments` are the body's argument
  // values (carried, then sequence slices, then invariants); returns the
  // next carried values.
  using BodyFunction =
      std::function<std::vector<ValueId>(GraphBuilder& body, const std::vector<ValueId>& arguments)>;
  // Returns the carried values' final values.
  std::vector<ValueId> repeat(const std::string& name, std::int64_t count,
                              const RepeatOperands& operands, const BodyFunction& build_body);

  void output(const std::string& name, ValueId value);

  const Graph& graph() const { return graph_; }
  // The value named `name`, or kNoValue.
  ValueId find(const std::string& name) const;
  // The finished graph; a top-level graph needs at least one output.
  Graph finish();

 private:
  ValueId add_single(Op op, std::optional<StorageType> result);
  std::vector<ValueId> add_op(Op op, std::vector<StorageType> result_storage);
  std::vector<ValueId> append(Op op, std::vector<TensorType> result_types);
  ValueId add_source(OpKind kind, const std::string& name, const TensorType& type);
  ValueId add_argument(const std::string& name, const TensorType& type);
  void claim_op_name(const std::string& name);
  void check_operand(const std::string& op_name, ValueId id) const;

  Graph graph_;
  bool is_body_ = false;
  std::set<std::string, std::less<>> op_names_;
  std::map<std::string, ValueId, std::less<>> value_names_;
};

}  // namespace tilec::graph
