#include "bench/workload_data.h"

#include "graph/reference.h"
#include "graph/vit_workload.h"

#include <fmt/format.h>

#include <chrono>

namespace tilec::bench {

ReferenceOutputs compute_reference(const graph::Graph& graph, const graph::TensorMap& data) {
  const auto begin = std::chrono::steady_clock::now();
  ReferenceOutputs reference;
  reference.outputs = graph::run_reference(graph, data).outputs;
  const auto middle = std::chrono::steady_clock::now();
  reference.seconds = std::chrono::duration<double>(middle - begin).count();
  reference.exact = graph::run_exact_reference(graph, data);
  reference.exact_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - middle).count();
  return reference;
}

WorkloadData::WorkloadData(const std::string& workload, const graph::MlpOptions& options) {
  graph::Workload built = graph::make_workload(workload, options);
  graph_ = std::move(built.graph);
  data_ = graph::generate_data(graph_, options.seed, built.data_rules);
}

const ReferenceOutputs& WorkloadData::reference() {
  std::call_once(reference_once_, [this] { reference_ = compute_reference(graph_, data_); });
  return reference_;
}

std::shared_ptr<WorkloadData> WorkloadCache::get(const std::string& workload, const graph::MlpOptions& options) {
  const auto dimension = [](const std::optional<std::int64_t>& value) { return value ? *value : 0; };
  const std::string key =
      fmt::format("{} {} b{} n{} t{} w{} h{} l{} head{} bias{} seed{} scale{}", workload,
                  graph::precision_name(options.precision), options.batch, options.blocks, dimension(options.tokens),
                  dimension(options.width), dimension(options.hidden), dimension(options.layers), options.head,
                  options.bias, options.seed, options.fp8_scale ? std::to_string(*options.fp8_scale) : "auto");
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mutex_);
    std::shared_ptr<Entry>& slot = entries_[key];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  std::call_once(entry->built, [&] { entry->data = std::make_shared<WorkloadData>(workload, options); });
  return entry->data;
}

WorkloadKind workload_kind(std::string_view workload) {
  if (workload == "siglip-vit" || workload == "vit") return WorkloadKind::VitTower;
  if (workload == "siglip-vit-layer" || workload == "vit-layer") return WorkloadKind::VitLayer;
  return WorkloadKind::Mlp;
}

std::optional<std::int64_t> case_layers(std::string_view workload, const graph::MlpOptions& options) {
  if (workload_kind(workload) != WorkloadKind::VitTower) return std::nullopt;
  return options.layers.value_or((workload == "vit" ? graph::kSmallVit : graph::kSiglipVit).layers);
}

CaseReport workload_case(const std::string& workload, const graph::MlpOptions& options, std::uint32_t budget_kib) {
  CaseReport identity;
  identity.batch = options.batch;
  identity.precision = graph::precision_name(options.precision);
  identity.budget_kib = budget_kib;
  const WorkloadKind kind = workload_kind(workload);
  if (kind == WorkloadKind::Mlp) identity.blocks = options.blocks;
  if (kind == WorkloadKind::VitTower) {
    identity.layers = case_layers(workload, options);
    identity.head = options.head;
  }
  identity.name = case_name(identity);
  return identity;
}

std::string workload_label(const std::string& workload, const graph::MlpOptions& options) {
  // The graph as the workload builds it checks the options and gives the
  // dimensions; at FP16 no FP8 scale is chosen, so this generates no data.
  graph::MlpOptions shape_only = options;
  shape_only.precision = graph::Precision::Fp16;
  shape_only.fp8_scale.reset();
  const graph::Graph graph = graph::build_workload(workload, shape_only);
  std::string label = workload;
  if (workload_kind(workload) != WorkloadKind::Mlp) {
    const bool small = !workload.starts_with("siglip");
    const graph::VitDimensions& base = small ? graph::kSmallVit : graph::kSiglipVit;
    if (small) label += fmt::format(" {}x{}", options.width.value_or(base.width), options.hidden.value_or(base.hidden));
    if (const std::optional<std::int64_t> layers = case_layers(workload, options))
      label += fmt::format(" layers {}", *layers);
    if (!options.head) label += " no head";
  } else if (workload != "siglip-mlp") {
    const graph::Shape& x = graph.type(graph.inputs().at(0)->results.at(0)).shape;
    const graph::Shape& w1 = graph.type(graph.parameters().at(0)->results.at(0)).shape;
    label += fmt::format(" {}x{}x{}", x.at(x.size() - 2), x.back(), w1.back());
  }
  if (options.bias) label += " bias";
  if (options.seed != 0) label += fmt::format(" seed {}", options.seed);
  return label;
}

}  // namespace tilec::bench
