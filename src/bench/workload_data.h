// Built-in workloads' graphs and data, made once per distinct workload and
// shared by every case that runs it: the cases of a sweep that differ only
// in budget run the same graph on the same data, so they share the host
// reference too (computed by whichever case needs it first).
#pragma once

#include "bench/run_case.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "graph/workloads.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace tilec::bench {

// The host reference and the exact reference of `graph` on `data`, timed.
ReferenceOutputs compute_reference(const graph::Graph& graph, const graph::TensorMap& data);

class WorkloadData {
 public:
  // BadInput for an unknown workload or out-of-range options.
  WorkloadData(const std::string& workload, const graph::MlpOptions& options);

  const graph::Graph& graph() const { return graph_; }
  const graph::TensorMap& data() const { return data_; }
  // Computed on the first call; later and concurrent calls wait for it.
  const ReferenceOutputs& reference();

 private:
  graph::Graph graph_;
  graph::TensorMap data_;
  std::once_flag reference_once_;
  ReferenceOutputs reference_;
};

class WorkloadCache {
 public:
  // The workload's data, built on the first request for these options.
  std::shared_ptr<WorkloadData> get(const std::string& workload, const graph::MlpOptions& options);

 private:
  struct Entry {
    std::once_flag built;
    std::shared_ptr<WorkloadData> data;
  };
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

// What a built-in workload's cases differ by beyond precision and batch:
// the MLPs' blocks, the ViT towers' layers and head, and neither for one
// encoder layer.
enum class WorkloadKind : std::uint8_t { Mlp, VitTower, VitLayer };
// Mlp for a name that is no ViT workload (building it reports an unknown one).
WorkloadKind workload_kind(std::string_view workload);
// The encoder layers of a ViT tower's case: `options.layers`, or the
// workload's own (27 for siglip-vit, 2 for vit); nullopt for the others.
std::optional<std::int64_t> case_layers(std::string_view workload, const graph::MlpOptions& options);

// A built-in workload's case as reports name it: batch, precision, budget,
// blocks (MLPs) or layers and head (ViT towers), and the name they give
// (case_name). Its workload label and target are left to the caller.
CaseReport workload_case(const std::string& workload, const graph::MlpOptions& options, std::uint32_t budget_kib);

// "siglip-mlp" or "mlp 8x16x32" (tokens x width x hidden), "siglip-vit
// layers 27" or "vit 16x32 layers 2" (width x hidden; "siglip-vit-layer",
// "vit-layer 16x32" for one encoder layer), with " no head",
// " bias" and " seed N" when they are not the defaults: the report's
// `workload`.
// Precision, batch and blocks are not part of it. BadInput for options the
// workload does not take.
std::string workload_label(const std::string& workload, const graph::MlpOptions& options);

}  // namespace tilec::bench
