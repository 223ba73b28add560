// The builder group_exchanges runs, shared by its two halves:
// group_exchanges.cpp (phases, places, rearranges, GEMMs, reductions and
// maps) and group_exchanges_rows.cpp (row ops and attention).
#pragma once

#include "compiler/group_exchanges.h"
#include "compiler/cost_model.h"
#include "compiler/kernel_library.h"
#include "compiler/attention_candidates.h"
#include "compiler/kernel_plan.h"
#include "compiler/row_candidates.h"
#include "compiler/summation_order.h"
#include "support/error.h"

#include <map>
#include <string>
#include <vector>

namespace tilec::compiler {

class LirBuilder {
 public:
  LirBuilder(const Chain& chain, const MidProgram& program, Lir& lir) : chain_(chain), program_(program), lir_(lir) {}

  void build();

 private:
  const MidValue& value(int id) const { return program_.values[static_cast<std::size_t>(id)]; }
  const GroupPlan& groups() const { return program_.groups; }

  int add_buffer(Buffer buffer);

  void widen(int buffer, int phase);

  // Phases: an exchange goes into the first phase after its inputs are
  // computed; compute joins the phase its inputs are ready in. Program
  // order is kept.
  void assign_phases();

  void producers();

  // A value's piece on the busiest tile. Partial sums (and values a GEMM
  // may drain straight into, once eliminate removes an identity reduction)
  // take whole 16-column blocks.
  std::uint32_t largest_piece(int id) const;

  // Whether `id` is the output of a reduction that only copies (one K part,
  // no epilogue, same type), which eliminate turns into the GEMM's drain.
  bool drained_into(int id) const;

  bool loop_carried_value(int id) const;

  int first_value_of_input(const std::string& name) const;

  bool is_host_input(int id) const;

  // Buffers and places of every value. Host inputs and graph outputs live
  // in the chunk records; loop-carried values share one buffer.
  void place_values();

  int phase_of(int op) const { return lir_.op_phase[static_cast<std::size_t>(op)]; }

  void add_op(int index);

  // Every block of the destination gets, from the source block holding
  // each part of it, its rows x columns in one transfer (block_move), with
  // a byte pattern at an end where each column's rows are a run of their own.
  void add_rearrange(int index);

  // A resident buffer for a weight, or its slice of the iteration record
  // when each repeat iteration has its own; `sent_only` when only sends
  // read the slice (a moved weight's stored piece, once weights are staged).
  Place weight_place(const std::string& name, BufferKind kind, std::uint32_t bytes, bool per_iteration,
                     bool sent_only = false);

  // Every place in the iteration record steps by the record's size. With
  // staged weights, kernels read a working copy of the slices they use,
  // which each iteration's first exchange fills from the record (each tile
  // sends its own slices to itself); sends of moved weights read the record
  // itself. The bindings still fill the record.
  void finish_iteration_record();

  // Bytes of one 16-column block of weights over K part k.
  std::uint32_t weight_block_bytes(int step_index, const GemmGrid& grid, int k) const;

  // The weights a tile stores: its (n, k) block, or its piece of it when
  // weights move; `whole` asks for the whole block whatever the grid.
  std::uint32_t weight_bytes(int step_index, const GemmGrid& grid, bool whole) const;

  void add_gemm_task(int index, int tile, const Place& weights, std::int64_t first_block, std::int64_t blocks, int m,
                     int k);

  // Moved weights: before the GEMM, every tile of row part m multicasts its
  // piece of the (n, k) block to the other row parts' tiles, into a buffer
  // that holds the whole block on each. A tile then runs its own piece from
  // where it is stored and the gathered blocks before and after it. Staged
  // pieces sit where kernels do not read (standard memory): each tile
  // sends its own piece to itself too and runs the gathered block whole.
  void add_gemm(int index);

  // The bias of an epilogue, one word per output column a tile holds.
  Place bias_buffer(const std::vector<EpilogueOp>& epilogue, const Layout& layout);

  void add_reduce(int index);

  // Elementwise: each tile's piece of the output from its pieces of the
  // inputs (and of a table, a parameter stored as the output's piece).
  void add_map(int index);

  // One task per tile of the output's layout: the statistics over every
  // column of the rows (each tile holds them all), its columns of the
  // output.
  // gamma and beta as FP32 pairs {gamma[c], beta[c]}, the kernel's form,
  // for each tile's output columns.
  Place layernorm_pairs(int index);

  // Whole rows: one task per tile of the output's layout, the statistics
  // over every column of its rows, its columns of the output.
  void add_row_op(int index);

  static std::int64_t panels_of(Range rows) { return (rows.size() + kPanelRows - 1) / kPanelRows; }

  // A resident buffer of the compiler's own data: `contents` for every
  // tile, or one list per group tile.
  Place add_constant(const std::string& name, std::vector<std::vector<std::uint8_t>> contents);

  static std::vector<std::uint8_t> float_bytes(const std::vector<float>& values);

  // How the split row op whose statistics `op` gathers runs (the search
  // chose it with the same figures).
  SplitRowPlan split_plan(const MidOp& op) const;

  // Split columns, first half: each tile's statistics of its block over its
  // columns, into its slot (column part c) of the statistics buffer, which
  // holds a slot per column part; several ranges' slots are merged first.
  void add_row_statistics(int index);

  // Split columns, second half: every tile's slot to every other tile of
  // its row part (one multicast), then the result over its block from
  // every slot, or from their merge.
  void add_row_apply(int index);

  AttentionShape attention_shape(const MidOp& op) const;

  AttentionKernels attention_kernels_of(const MidOp& op) const;

  Place scratch_buffer(const std::string& name, std::uint32_t bytes, int phase);

  // The 16x16 identity in `type`, the transpose's activation operand.
  Place identity(ElementType type);

  // Each tile's share (attention_candidates.h), head after head: v
  // transposed, the scores, the softmax (one run, or three over column
  // chunks), P v into the output's head columns or the tile's partial.
  void add_attention(int index);

  // Several key blocks: block (s, j, g)'s partials go to the tiles of the
  // next block, key part b receiving share b of every partial (and every
  // partial's statistics, one multicast), into slots in key part order;
  // each merges its share.
  void add_attention_merge(int index);

  const Chain& chain_;
  const MidProgram& program_;
  Lir& lir_;
  std::vector<int> producer_;
  int current_op_ = -1;  // the op add_op is building, which the buffers it adds serve
  int iteration_record_ = -1;
  struct RecordSlice {
    std::uint32_t offset = 0, bytes = 0;
    bool sent_only = false;
  };
  std::vector<RecordSlice> record_slices_;  // in offset order
  std::map<ElementType, Place> identities_;
};

}  // namespace tilec::compiler
