// Stage construct_mid: choose the plan and build the mid-level IR.
//
// Needs: the chain, its GEMM candidates, the kernel library's code size.
// Does: a search over the chain's steps in order. For every group size and
// chunk count it runs a dynamic program whose states are the layouts at
// step boundaries and whose labels are (estimated cycles, estimated peak
// bytes per tile), keeping the Pareto front of labels per state.
// Produces: every plan on the overall Pareto front, fastest first (the
// driver takes the fastest whose exact memory fits the budget), and the
// mid-level IR of a chosen plan: values with layouts, ops with supersteps.
// Leaves for later: addresses, exchange timing, worker shares, code.
#pragma once

#include "compiler/chain.h"
#include "compiler/gemm_candidates.h"
#include "compiler/mid.h"
#include "compiler/options.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace tilec::compiler {

struct PlanChoice {
  int group_size = 1;
  int groups = 1;
  int chunks = 1;
  // Per chain step: the index of its candidate among a GEMM's
  // (gemm_candidates), a layernorm's or softmax's (row_candidates) or an
  // attention's (attention_candidates) for the group size; -1 for others.
  std::vector<int> step_choice;
  int input_spread = 1;          // how host inputs are spread (stored_once)
  // The repeat's weights are stored in both memory classes, and each
  // iteration's copied into interleaved memory at its start (lir.h).
  bool staged_weights = false;
  MidEstimate estimate;

  std::string summary(const Chain& chain, const GemmCandidates& candidates) const;
  // The same plan, whatever its estimate.
  bool same_plan(const PlanChoice& other) const { return same_frame(other) && step_choice == other.step_choice; }
  // The same plan but for the steps outside the repeat, which run once
  // (with no repeat, the same plan).
  bool same_repeat_body(const PlanChoice& other, const Chain& chain) const;

 private:
  // The same tiles, chunks, input spread and staging.
  bool same_frame(const PlanChoice& other) const {
    return group_size == other.group_size && chunks == other.chunks && input_spread == other.input_spread &&
           staged_weights == other.staged_weights;
  }
};

struct PlanSearch {
  std::vector<PlanChoice> front;  // Pareto front, fastest first
  // The plan with the smallest estimated peak, even when it cannot fit the
  // memory classes (what a diagnostic explains).
  std::optional<PlanChoice> smallest;
  std::int64_t plans_considered = 0;
};

// What a second search is told: the least the plans built missed their
// estimates by and, when a plan was built, the most chunks worth
// searching (as many as it takes; more only cost cycles) and its
// estimated cycles, which a plan must beat.
struct SecondSearch {
  EstimateShortfall missed;
  std::int64_t most_chunks = INT64_MAX;
  double cycles_to_beat = std::numeric_limits<double>::infinity();
};

// A second search keeps only plans that fit after the shortfall.
PlanSearch search_plans(const Chain& chain, const GemmCandidates& candidates,
                        const std::vector<int>& group_sizes, std::int64_t library_code_bytes,
                        const CompileOptions& options, std::optional<SecondSearch> again = std::nullopt);

MidProgram construct_mid(const Chain& chain, const GemmCandidates& candidates, const PlanChoice& choice,
                         const CompileOptions& options);

}  // namespace tilec::compiler
