#include "onnx/staged_graph.h"

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace tilec::onnx_import {

std::string graph_name(const std::string& onnx_name) {
  std::string name;
  for (char c : onnx_name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || c == '.';
    name += keep ? c : '_';
  }
  if (name.empty() || name.front() == '-' || name.front() == '.') name = "v" + name;
  return name;
}

std::string StagedGraph::unique_name(const std::string& wanted) {
  const std::string base = graph_name(wanted);
  std::string name = base;
  for (int suffix = 1; std::find(names_.begin(), names_.end(), name) != names_.end(); ++suffix)
    name = fmt::format("{}.{}", base, suffix);
  names_.push_back(name);
  return name;
}

StagedId StagedGraph::add_input(const std::string& name, const graph::TensorType& type) {
  StagedValue value;
  value.type = type;
  value.name = unique_name(name);
  value.is_input = true;
  values_.push_back(std::move(value));
  return static_cast<StagedId>(values_.size()) - 1;
}

StagedId StagedGraph::add_constant(const std::string& name, HostTensor tensor, StorageType storage) {
  StagedValue value;
  value.type = {tensor.shape, storage};
  value.constant = std::move(tensor);
  value.name = name;  // named when it becomes a parameter
  values_.push_back(std::move(value));
  return static_cast<StagedId>(values_.size()) - 1;
}

StagedId StagedGraph::add_op(graph::Op op, StorageType result, const std::string& node) {
  op.name = unique_name(op.name);
  std::vector<graph::TensorType> operand_types;
  for (StagedId id : op.operands) operand_types.push_back(type(id));
  std::vector<graph::Shape> shapes = graph::infer_result_shapes(op, operand_types);
  graph::check_type(fmt::format("op '{}'", op.name), "its result", {shapes.at(0), result});
  StagedValue value;
  value.type = {shapes.at(0), result};
  value.name = op.name;
  value.producer = static_cast<int>(ops_.size());
  values_.push_back(std::move(value));
  const auto id = static_cast<StagedId>(values_.size()) - 1;
  if (op.kind == graph::OpKind::Reshape) op.target_shape = shapes.at(0);
  op.results = {id};
  ops_.push_back(StagedOp{std::move(op), node, false});
  return id;
}

void StagedGraph::replace_op(StagedId root, graph::Op op) {
  StagedOp& old = ops_.at(static_cast<std::size_t>(value(root).producer));
  const std::string name = old.op.name, node = old.node;
  old.op.name += ".replaced";  // dead from here on; its name goes to the new op
  std::replace(names_.begin(), names_.end(), name, old.op.name);
  op.name = name;
  const StagedId result = add_op(std::move(op), type(root).storage, node);
  replace_uses(root, result);
  old.dead = true;
}

const StagedOp* StagedGraph::producer(StagedId id) const {
  const int index = value(id).producer;
  if (index < 0 || ops_[static_cast<std::size_t>(index)].dead) return nullptr;
  return &ops_[static_cast<std::size_t>(index)];
}

void StagedGraph::add_output(const std::string& name, StagedId value) { outputs_.emplace_back(name, value); }

void StagedGraph::replace_uses(StagedId from, StagedId to) {
  for (StagedOp& op : ops_)
    if (!op.dead) std::replace(op.op.operands.begin(), op.op.operands.end(), from, to);
  for (auto& [name, id] : outputs_)
    if (id == from) id = to;
}

int StagedGraph::use_count(StagedId id) const {
  int uses = 0;
  for (const StagedOp& op : ops_)
    if (!op.dead) uses += static_cast<int>(std::count(op.op.operands.begin(), op.op.operands.end(), id));
  for (const auto& [name, value] : outputs_) uses += value == id;
  return uses;
}

void StagedGraph::remove_dead_ops() {
  // Pattern rewrites append ops that earlier ones read, so liveness follows
  // operands from the outputs rather than the order of the ops.
  std::vector<bool> live(values_.size(), false);
  std::vector<StagedId> pending;
  for (const auto& [name, id] : outputs_) pending.push_back(id);
  while (!pending.empty()) {
    const StagedId id = pending.back();
    pending.pop_back();
    if (live[static_cast<std::size_t>(id)]) continue;
    live[static_cast<std::size_t>(id)] = true;
    const int producer = value(id).producer;
    if (producer < 0 || ops_[static_cast<std::size_t>(producer)].dead) continue;
    for (StagedId operand : ops_[static_cast<std::size_t>(producer)].op.operands) pending.push_back(operand);
  }
  for (StagedOp& op : ops_) op.dead = op.dead || !live[static_cast<std::size_t>(op.op.results[0])];
}

graph::Graph StagedGraph::emit(graph::TensorMap& parameters) const {
  graph::GraphBuilder builder;
  std::map<StagedId, graph::ValueId> ids;
  for (std::size_t i = 0; i < values_.size(); ++i)
    if (values_[i].is_input) ids[static_cast<StagedId>(i)] = builder.input(values_[i].name, values_[i].type);
  // Constants that live ops or outputs read become parameters, in first use order.
  std::vector<StagedId> used;
  auto note = [&](StagedId id) {
    if (value(id).constant && std::find(used.begin(), used.end(), id) == used.end()) used.push_back(id);
  };
  for (const StagedOp& op : ops_)
    if (!op.dead)
      for (StagedId operand : op.op.operands) note(operand);
  for (const auto& [name, id] : outputs_) note(id);
  std::set<std::string> taken(names_.begin(), names_.end());
  for (StagedId id : used) {
    const StagedValue& constant = value(id);
    std::string name = graph_name(constant.name);
    for (int suffix = 1; taken.contains(name); ++suffix) name = fmt::format("{}.{}", graph_name(constant.name), suffix);
    taken.insert(name);
    ids[id] = builder.parameter(name, constant.type);
    parameters.insert_or_assign(name, to_graph_tensor(*constant.constant, constant.type.storage));
  }
  // Pattern rewrites append ops that earlier ones read: emit operands first.
  std::vector<const StagedOp*> order;
  std::vector<bool> placed(ops_.size(), false);
  std::function<void(std::size_t)> place = [&](std::size_t index) {
    if (placed[index] || ops_[index].dead) return;
    placed[index] = true;
    for (StagedId operand : ops_[index].op.operands)
      if (value(operand).producer >= 0) place(static_cast<std::size_t>(value(operand).producer));
    order.push_back(&ops_[index]);
  };
  for (std::size_t i = 0; i < ops_.size(); ++i) place(i);
  for (const StagedOp* staged_op : order) {
    const StagedOp& staged = *staged_op;
    graph::Op op = staged.op;
    for (StagedId& operand : op.operands) operand = ids.at(operand);
    const StagedId result = staged.op.results[0];
    try {
      ids[result] = builder.apply(std::move(op), type(result).storage);
    } catch (const Error& error) {
      throw error.within(staged.node);
    }
  }
  for (const auto& [name, id] : outputs_) builder.output(graph_name(name), ids.at(id));
  return builder.finish();
}

}  // namespace tilec::onnx_import
