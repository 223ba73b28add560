// The compiler: a graph in, a package out.
//
// compile() runs the stages in order, each timed by a span of its name (see
// compile.cpp, which lists them top to bottom). When the plan the search
// prefers does not fit the budget once its memory is exact, the driver
// tries the next plan of the Pareto front; when none fits, it fails with
// the smallest peak any plan reached, on which tile, what filled it, and
// the budget.
#pragma once

#include "compiler/options.h"
#include "support/error.h"
#include "graph/graph.h"
#include "package/package.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::compiler {

// The stages, in pipeline order; span names, report keys and --dump-after.
constexpr std::array<std::string_view, 18> kStages{
    "compile_runtime",       "gemm_candidates",  "construct_mid",
    "group_exchanges",       "merge_copies",     "eliminate",
    "plan_kernels",          "compile_kernels",  "link_runtime",
    "place_provisional_storage", "schedule_provisional_exchanges",
    "size_tile_code",        "place_storage",    "estimate_program",
    "lower_exchanges",       "prepare_tile_code", "emit_tile_code",
    "build_tile_images"};

// No plan fits the budget: a Failure (exit 1) whose message is the
// diagnostic (the smallest peak any plan reached, on which tile, what filled
// it, the budget).
class NoPlanFits : public Error {
 public:
  explicit NoPlanFits(std::string message) : Error(ErrorKind::Failure, "compile", std::move(message)) {}
};

struct CompileResult {
  package::Package package;
  double estimated_cycles = 0;         // the built program's (estimate_program)
  double search_estimated_cycles = 0;  // what the plan search expected of it
  std::uint32_t peak_bytes = 0;  // largest per-tile use, code included
  std::int64_t estimated_peak_bytes = 0;  // what the plan search expected of it
  std::string plan;              // one line describing the chosen plan
  std::vector<std::string> log;  // what the driver decided, line by line
  std::string dump;              // the IR after options.dump_after's stage
};

CompileResult compile(const graph::Graph& graph, const CompileOptions& options);

}  // namespace tilec::compiler
