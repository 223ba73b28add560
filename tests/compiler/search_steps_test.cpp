// The search prices moves that share an exchange phase (an attention's q,
// k and v) as one exchange with one sync, as the program runs them.
#include "compiler/search_steps.h"

#include <gtest/gtest.h>

namespace tilec::compiler {
namespace {

using search::add_rearrange;
using search::add_rearranges;
using search::Label;
using search::LayoutTable;
using search::Move;
using search::SearchContext;
using search::StepCosts;

struct Fixture {
  LayoutTable layouts;
  std::map<int, std::vector<search::CandidateLayouts>> candidate_layouts;
  std::map<int, std::vector<RowCandidate>> row_candidates;
  std::map<int, std::vector<int>> row_kept;
  std::map<int, std::vector<AttentionCandidate>> attention_candidates;
  std::map<int, std::vector<int>> attention_kept;
  std::map<int, std::map<int, search::AttentionLayoutIds>> attention_layouts;
  Chain chain;
  GemmCandidates candidates;
  CompileOptions options;
  StepCosts step_costs;
  SearchContext context{layouts, candidate_layouts, row_candidates, row_kept, attention_candidates, attention_kept,
                        attention_layouts, chain, candidates, options, 8, 2, 1, 1, step_costs};

  // 64 columns of 2 panels in 4 column parts on tiles first..first+3.
  int columns_on(int first) {
    return layouts.id(column_layout(2, balanced_split(64, 4, 16), {{first}, {first + 1}, {first + 2}, {first + 3}}));
  }
};

TEST(SearchSteps, MovesOfOnePhaseShareOneExchangeAndOneSync) {
  Fixture f;
  const int left = f.columns_on(0), right = f.columns_on(4);
  Label apart, together;
  add_rearrange(f.context, left, right, 2, 1.0, apart);
  add_rearrange(f.context, right, left, 2, 1.0, apart);
  const Move moves[] = {{left, right, 2}, {right, left, 2}};
  add_rearranges(f.context, moves, 1.0, together);
  EXPECT_EQ(apart.exchanges, 2);
  EXPECT_EQ(together.exchanges, 1);
  EXPECT_GT(together.cycles, 0.0);
  EXPECT_LT(together.cycles, apart.cycles);
  // Each tile sends and receives both moves' bytes in the one phase.
  const RearrangeCost one = f.layouts.cost(left, right);
  EXPECT_DOUBLE_EQ(together.cycles,
                   exchange_cycles(2 * 2 * one.elements_in, 2 * 2 * one.elements_out, 2 * one.transfers,
                                   f.options.machine, 2 * one.patterned));
  // A move to where the value already is costs nothing, alone or with others.
  Label still;
  const Move staying[] = {{left, left, 2}};
  add_rearranges(f.context, staying, 1.0, still);
  EXPECT_EQ(still.exchanges, 0);
  EXPECT_EQ(still.cycles, 0.0);
}

}  // namespace
}  // namespace tilec::compiler
