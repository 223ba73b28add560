#include "compiler/group_exchanges.h"

#include "compiler/cost_model.h"
#include "compiler/kernel_library.h"
#include "compiler/attention_candidates.h"
#include "compiler/kernel_plan.h"
#include "compiler/row_candidates.h"
#include "compiler/summation_order.h"
#include "support/error.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace tilec::compiler {

namespace {

std::uint32_t round_up(std::uint32_t value, std::uint32_t unit) { return (value + unit - 1) / unit * unit; }

bool exchanges(const MidOp& op) {
  return op.kind == MidOpKind::Rearrange || op.kind == MidOpKind::RowApply || op.kind == MidOpKind::AttentionMerge ||
         (op.kind == MidOpKind::Reduce && op.grid.k_parts > 1);
}

class LirBuilder {
 public:
  LirBuilder(const Chain& chain, const MidProgram& program, Lir& lir) : chain_(chain), program_(program), lir_(lir) {}

  void build() {
    assign_phases();
    producers();
    place_values();
    for (int index = 0; index < static_cast<int>(program_.ops.size()); ++index) {
      current_op_ = index;
      add_op(index);
    }
    current_op_ = -1;
    finish_iteration_record();
  }

 private:
  const MidValue& value(int id) const { return program_.values[static_cast<std::size_t>(id)]; }
  const GroupPlan& groups() const { return program_.groups; }

  int add_buffer(Buffer buffer) {
    buffer.bytes = round_up(buffer.bytes, 16);
    const bool shared = buffer.kind == BufferKind::ChunkRecord || buffer.kind == BufferKind::IterationRecord;
    buffer.op = shared ? -1 : buffer.value >= 0 ? producer_[static_cast<std::size_t>(buffer.value)] : current_op_;
    lir_.buffers.push_back(std::move(buffer));
    return static_cast<int>(lir_.buffers.size()) - 1;
  }

  void widen(int buffer, int phase) {
    Lifetime& life = lir_.buffers[static_cast<std::size_t>(buffer)].lifetime;
    life.first = std::min(life.first, phase);
    life.last = std::max(life.last, phase);
  }

  // Phases: an exchange goes into the first phase after its inputs are
  // computed; compute joins the phase its inputs are ready in. Program
  // order is kept.
  void assign_phases() {
    std::map<int, int> ready;  // value -> phase whose compute can read it
    int current = 0;
    lir_.op_phase.assign(program_.ops.size(), 0);
    for (std::size_t index = 0; index < program_.ops.size(); ++index) {
      const MidOp& op = program_.ops[index];
      int phase = current;
      if (exchanges(op)) {
        for (int input : op.inputs) {
          auto it = ready.find(input);
          phase = std::max(phase, it == ready.end() ? 0 : it->second + 1);
        }
      } else {
        for (int input : op.inputs) {
          auto it = ready.find(input);
          if (it != ready.end()) phase = std::max(phase, it->second);
        }
      }
      lir_.op_phase[index] = phase;
      ready[op.output] = phase;
      current = phase;
    }
    lir_.phases = program_.ops.empty() ? 0 : current + 1;
    if (program_.repeat_first_op >= 0) {
      lir_.repeat_first_phase = lir_.op_phase[static_cast<std::size_t>(program_.repeat_first_op)];
      lir_.repeat_last_phase = lir_.op_phase[static_cast<std::size_t>(program_.repeat_last_op)];
      // The region must own whole phases: nothing before it may share its
      // first phase, nothing after it its last.
      for (std::size_t index = 0; index < program_.ops.size(); ++index) {
        int i = static_cast<int>(index);
        if (i < program_.repeat_first_op && lir_.op_phase[index] >= lir_.repeat_first_phase) {
          for (std::size_t later = static_cast<std::size_t>(program_.repeat_first_op); later < program_.ops.size(); ++later)
            ++lir_.op_phase[later];
          ++lir_.repeat_first_phase;
          ++lir_.repeat_last_phase;
          ++lir_.phases;
          break;
        }
      }
      for (std::size_t index = static_cast<std::size_t>(program_.repeat_last_op) + 1; index < program_.ops.size(); ++index)
        if (lir_.op_phase[index] <= lir_.repeat_last_phase) {
          for (std::size_t later = index; later < program_.ops.size(); ++later) ++lir_.op_phase[later];
          ++lir_.phases;
          break;
        }
    }
  }

  void producers() {
    producer_.assign(program_.values.size(), -1);
    for (std::size_t index = 0; index < program_.ops.size(); ++index)
      producer_[static_cast<std::size_t>(program_.ops[index].output)] = static_cast<int>(index);
  }

  // A value's piece on the busiest tile. Partial sums (and values a GEMM
  // may drain straight into, once eliminate removes an identity reduction)
  // take whole 16-column blocks.
  std::uint32_t largest_piece(int id) const {
    const MidValue& v = value(id);
    const int producer = producer_[static_cast<std::size_t>(id)];
    const bool attention = producer >= 0 && program_.ops[static_cast<std::size_t>(producer)].kind == MidOpKind::Attention;
    if (attention && v.partial) {
      // A tile's partial (its head's O in FP32) and the rows' statistics.
      const MidOp& op = program_.ops[static_cast<std::size_t>(producer)];
      const AttentionScratch sizes = attention_scratch(attention_shape(op), attention_kernels_of(op));
      return sizes.partial + sizes.statistics;
    }
    // The GEMM P v drains whole 16-column blocks into attention's output.
    const bool blocks = v.partial || drained_into(id) || attention;
    std::int64_t most = 0;
    for (const Range& part : v.layout.cols)
      most = std::max(most, blocks ? (part.size() + kPanelRows - 1) / kPanelRows * kPanelRows : part.size());
    return static_cast<std::uint32_t>(most) * column_bytes(v);
  }

  // Whether `id` is the output of a reduction that only copies (one K part,
  // no epilogue, same type), which eliminate turns into the GEMM's drain.
  bool drained_into(int id) const {
    int op_index = producer_[static_cast<std::size_t>(id)];
    if (op_index < 0) return false;
    const MidOp& op = program_.ops[static_cast<std::size_t>(op_index)];
    return op.kind == MidOpKind::Reduce && op.grid.k_parts == 1 && op.epilogue.empty() &&
           value(op.inputs[0]).storage == value(id).storage;
  }

  bool loop_carried_value(int id) const {
    for (const auto& [end, start] : program_.loop_carried)
      if (end == id || start == id) return true;
    return false;
  }

  int first_value_of_input(const std::string& name) const {
    for (const auto& [input, activation] : chain_.inputs)
      if (input == name)
        for (std::size_t id = 0; id < program_.values.size(); ++id)
          if (program_.values[id].activation == activation) return static_cast<int>(id);
    TILEC_CHECK(false, "input '{}' has no value", name);
  }

  bool is_host_input(int id) const {
    if (producer_[static_cast<std::size_t>(id)] >= 0) return false;
    for (const auto& [name, activation] : chain_.inputs)
      if (activation == value(id).activation) return true;
    return false;
  }

  // Buffers and places of every value. Host inputs and graph outputs live
  // in the chunk records; loop-carried values share one buffer.
  void place_values() {
    lir_.value_places.assign(program_.values.size(), Place{});
    std::vector<int> outputs;
    for (const auto& [name, activation] : chain_.outputs) {
      int last = -1;
      for (std::size_t id = 0; id < program_.values.size(); ++id)
        if (program_.values[id].activation == activation) last = static_cast<int>(id);
      outputs.push_back(last);
    }
    std::uint32_t record = 0;
    std::vector<std::pair<int, std::uint32_t>> in_record;  // value, offset
    for (std::size_t id = 0; id < program_.values.size(); ++id) {
      int v = static_cast<int>(id);
      bool io = is_host_input(v) || std::find(outputs.begin(), outputs.end(), v) != outputs.end();
      if (!io) continue;
      in_record.emplace_back(v, record);
      record += round_up(largest_piece(v), 16);
    }
    // The pixels patches leave out are loaded too, spread over the group.
    std::vector<std::pair<std::string, std::uint32_t>> unread;  // input, offset
    for (const auto& [name, patches] : chain_.patched_inputs) {
      const std::int64_t pieces = unread_pixel_pieces(patches) * groups().chunk_panels / row_unit_panels(chain_);
      if (pieces == 0) continue;
      const StorageType storage = value(first_value_of_input(name)).storage;
      unread.emplace_back(name, record);
      record += round_up(static_cast<std::uint32_t>((pieces + groups().group_size - 1) / groups().group_size *
                                                    kUnreadPieceElements) * element_bytes(storage.element), 16);
    }
    lir_.chunk_record_bytes = std::max<std::uint32_t>(record, 16);
    int chunk_buffer = -1;
    if (!in_record.empty()) {
      Buffer buffer{"chunk records", BufferKind::ChunkRecord};
      buffer.bytes = lir_.chunk_record_bytes * static_cast<std::uint32_t>(groups().chunks);
      buffer.lifetime.resident = true;
      chunk_buffer = add_buffer(std::move(buffer));
    }
    for (const auto& [v, offset] : in_record)
      lir_.value_places[static_cast<std::size_t>(v)] = Place{chunk_buffer, offset, lir_.chunk_record_bytes, 0};
    for (const auto& [name, offset] : unread)
      lir_.unread_pixels[name] = Place{chunk_buffer, offset, lir_.chunk_record_bytes, 0};

    for (std::size_t id = 0; id < program_.values.size(); ++id) {
      if (lir_.value_places[id].buffer >= 0) continue;
      const MidValue& v = program_.values[id];
      const bool statistics = producer_[id] >= 0 && program_.ops[static_cast<std::size_t>(producer_[id])].kind ==
                                                       MidOpKind::RowStatistics;
      Buffer buffer{v.name, statistics ? BufferKind::Statistics : v.partial ? BufferKind::Partial : BufferKind::Value};
      // Statistics: a slot (row_statistics_bytes) per column part.
      buffer.bytes = statistics ? static_cast<std::uint32_t>(row_statistics_bytes(v.layout.piece_panels) * v.cols)
                                : largest_piece(static_cast<int>(id));
      buffer.value = static_cast<int>(id);
      int phase = producer_[id] >= 0 ? lir_.op_phase[static_cast<std::size_t>(producer_[id])] : 0;
      buffer.lifetime = Lifetime{phase, phase, false};
      lir_.value_places[id] = Place{add_buffer(std::move(buffer)), 0, 0, 0};
    }
    // Loop-carried values: the body's final value is written where its
    // start value is read, and both live through the whole region.
    for (const auto& [final_value, start_value] : program_.loop_carried) {
      Place& start = lir_.value_places[static_cast<std::size_t>(start_value)];
      Place& final_place = lir_.value_places[static_cast<std::size_t>(final_value)];
      if (lir_.buffers[static_cast<std::size_t>(final_place.buffer)].kind == BufferKind::ChunkRecord) {
        start = final_place;
      } else {
        final_place = start;
      }
      if (lir_.buffers[static_cast<std::size_t>(start.buffer)].kind != BufferKind::ChunkRecord) {
        widen(start.buffer, lir_.repeat_first_phase);
        widen(start.buffer, lir_.repeat_last_phase);
      }
    }
    // Lifetimes reach every reader.
    for (std::size_t index = 0; index < program_.ops.size(); ++index)
      for (int input : program_.ops[index].inputs) {
        const Place& place = lir_.value_places[static_cast<std::size_t>(input)];
        if (lir_.buffers[static_cast<std::size_t>(place.buffer)].kind != BufferKind::ChunkRecord)
          widen(place.buffer, lir_.op_phase[index]);
      }
  }

  int phase_of(int op) const { return lir_.op_phase[static_cast<std::size_t>(op)]; }

  void add_op(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    switch (op.kind) {
      case MidOpKind::Rearrange: add_rearrange(index); return;
      case MidOpKind::Gemm: add_gemm(index); return;
      case MidOpKind::Reduce: add_reduce(index); return;
      case MidOpKind::Map: add_map(index); return;
      case MidOpKind::LayerNorm:
      case MidOpKind::Softmax: add_row_op(index); return;
      case MidOpKind::RowStatistics: add_row_statistics(index); return;
      case MidOpKind::RowApply: add_row_apply(index); return;
      case MidOpKind::Attention: add_attention(index); return;
      case MidOpKind::AttentionMerge: add_attention_merge(index); return;
    }
  }

  // Every block of the destination gets, from the source block holding
  // each part of it, its rows x columns in one transfer (block_move), with
  // a byte pattern at an end where each column's rows are a run of their own.
  void add_rearrange(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const MidValue& from = value(op.inputs[0]);
    const MidValue& to = value(op.output);
    const std::uint32_t element = element_bytes(to.storage.element);
    const std::uint32_t from_column = column_bytes(from), to_column = column_bytes(to);
    const Place source_base = lir_.value_places[static_cast<std::size_t>(op.inputs[0])];
    const Place destination_base = lir_.value_places[static_cast<std::size_t>(op.output)];
    for (int want = 0; want < to.layout.blocks(); ++want) {
      const Range want_rows = to.layout.block_rows(want), want_cols = to.layout.block_cols(want);
      for (int have = 0; have < from.layout.blocks(); ++have) {
        const Range have_rows = from.layout.block_rows(have), have_cols = from.layout.block_cols(have);
        const Range rows{std::max(want_rows.begin, have_rows.begin), std::min(want_rows.end, have_rows.end)};
        const Range cols{std::max(want_cols.begin, have_cols.begin), std::min(want_cols.end, have_cols.end)};
        if (rows.size() <= 0 || cols.size() <= 0) continue;
        const BlockMove move = block_move(from.layout, have, to.layout, want, rows, cols.size());
        const std::uint32_t run = static_cast<std::uint32_t>(rows.size()) * element;
        const std::span<const int> destinations = to.layout.block_tiles(want);
        Transfer transfer;
        transfer.phase = phase_of(index);
        transfer.op = index;
        transfer.source_tile = from.layout.block_tiles(have).front();
        transfer.destination_tiles.assign(destinations.begin(), destinations.end());
        transfer.source = source_base.plus(static_cast<std::uint32_t>(cols.begin - have_cols.begin) * from_column +
                                           static_cast<std::uint32_t>(rows.begin - have_rows.begin) * element);
        transfer.destination = destination_base.plus(static_cast<std::uint32_t>(cols.begin - want_cols.begin) * to_column +
                                                     static_cast<std::uint32_t>(rows.begin - want_rows.begin) * element);
        transfer.bytes = static_cast<std::uint32_t>(cols.size()) * (move.whole_columns ? from_column : run);
        if (move.source_strided) transfer.source_pattern = BytePattern{run, from_column};
        if (move.destination_strided) transfer.destination_pattern = BytePattern{run, to_column};
        transfer.what = to.layout.row_parts() == 1 && from.layout.row_parts() == 1
                            ? fmt::format("{} columns {}..{}", to.name, cols.begin, cols.end)
                            : fmt::format("{} rows {}..{} columns {}..{}", to.name, rows.begin, rows.end, cols.begin,
                                          cols.end);
        lir_.transfers.push_back(std::move(transfer));
      }
    }
  }

  // A resident buffer for a weight, or its slice of the iteration record
  // when each repeat iteration has its own; `sent_only` when only sends
  // read the slice (a moved weight's stored piece, once weights are staged).
  Place weight_place(const std::string& name, BufferKind kind, std::uint32_t bytes, bool per_iteration,
                     bool sent_only = false) {
    if (!per_iteration) {
      Buffer buffer{name, kind};
      buffer.bytes = bytes;
      buffer.lifetime.resident = true;
      return Place{add_buffer(std::move(buffer)), 0, 0, 0};
    }
    if (iteration_record_ < 0) {
      Buffer buffer{"weights of every iteration", BufferKind::IterationRecord};
      buffer.lifetime.resident = true;
      iteration_record_ = add_buffer(std::move(buffer));
    }
    Place place{iteration_record_, lir_.iteration_record_bytes, 0, 0};
    record_slices_.push_back(RecordSlice{place.offset, round_up(bytes, 16), sent_only});
    lir_.iteration_record_bytes += record_slices_.back().bytes;
    return place;
  }

  // Every place in the iteration record steps by the record's size. With
  // staged weights, kernels read a working copy of the slices they use,
  // which each iteration's first exchange fills from the record (each tile
  // sends its own slices to itself); sends of moved weights read the record
  // itself. The bindings still fill the record.
  void finish_iteration_record() {
    if (iteration_record_ < 0) return;
    const std::uint32_t stride = lir_.iteration_record_bytes;
    lir_.buffers[static_cast<std::size_t>(iteration_record_)].bytes =
        stride * static_cast<std::uint32_t>(program_.repeat_count);
    int copy = -1;
    std::vector<std::uint32_t> copy_offsets(record_slices_.size(), 0);
    if (program_.staged_weights) {
      Buffer buffer{"weights of this iteration", BufferKind::Weight};
      for (std::size_t slice = 0; slice < record_slices_.size(); ++slice)
        if (!record_slices_[slice].sent_only) {
          copy_offsets[slice] = buffer.bytes;
          buffer.bytes += record_slices_[slice].bytes;
        }
      buffer.lifetime.resident = true;
      copy = add_buffer(std::move(buffer));
      lir_.staged_record = iteration_record_;
      lir_.staged_copy = copy;
    }
    auto read = [&](Place& place) {
      if (place.buffer != iteration_record_) return;
      const auto after = std::upper_bound(record_slices_.begin(), record_slices_.end(), place.offset,
                                          [](std::uint32_t offset, const RecordSlice& s) { return offset < s.offset; });
      const std::size_t slice = static_cast<std::size_t>(after - record_slices_.begin()) - 1;
      if (copy >= 0 && !record_slices_[slice].sent_only) {
        place.buffer = copy;
        place.offset = copy_offsets[slice] + (place.offset - record_slices_[slice].offset);
      } else {
        place.iteration_stride = stride;
      }
    };
    auto stored = [&](Place& place) {
      if (place.buffer == iteration_record_) place.iteration_stride = stride;
    };
    for (Task& task : lir_.tasks) {
      read(task.weights);
      read(task.bias);
    }
    for (Transfer& transfer : lir_.transfers) read(transfer.source);
    for (auto& [op, place] : lir_.op_weights) stored(place);
    for (auto& [op, place] : lir_.row_weights) stored(place);
    for (auto& [weight, place] : lir_.bias_places) stored(place);
    if (copy < 0) return;
    // The first exchange of each iteration fills the copy, before any
    // compute of the iteration reads it; no send of that exchange may read
    // it too.
    for (const Transfer& transfer : lir_.transfers)
      TILEC_CHECK(transfer.phase != lir_.repeat_first_phase || transfer.source.buffer != copy,
                  "transfer '{}' reads the working copy of staged weights as it is filled", transfer.what);
    // One copy per run of adjacent slices kernels read.
    for (std::size_t first = 0; first < record_slices_.size();) {
      if (record_slices_[first].sent_only) {
        ++first;
        continue;
      }
      std::size_t end = first;
      std::uint32_t bytes = 0;
      while (end < record_slices_.size() && !record_slices_[end].sent_only) bytes += record_slices_[end++].bytes;
      for (int tile = 0; tile < groups().group_size; ++tile) {
        Transfer transfer;
        transfer.phase = lir_.repeat_first_phase;
        transfer.source_tile = tile;
        transfer.destination_tiles = {tile};
        transfer.source = Place{iteration_record_, record_slices_[first].offset, 0, stride};
        transfer.destination = Place{copy, copy_offsets[first], 0, 0};
        transfer.bytes = bytes;
        transfer.what = "weights of this iteration";
        lir_.transfers.push_back(std::move(transfer));
      }
      first = end;
    }
  }

  // Bytes of one 16-column block of weights over K part k.
  std::uint32_t weight_block_bytes(int step_index, const GemmGrid& grid, int k) const {
    const Step& step = chain_.steps[static_cast<std::size_t>(step_index)];
    const Weight& weight = chain_.weights[static_cast<std::size_t>(step.weight)];
    return static_cast<std::uint32_t>(kPanelRows * grid.ks[static_cast<std::size_t>(k)].size()) *
           element_bytes(weight.storage.element);
  }

  // The weights a tile stores: its (n, k) block, or its piece of it when
  // weights move; `whole` asks for the whole block whatever the grid.
  std::uint32_t weight_bytes(int step_index, const GemmGrid& grid, bool whole) const {
    std::uint32_t most = 0;
    for (int m = 0; m < (whole ? 1 : grid.row_parts); ++m)
      for (int n = 0; n < grid.column_parts; ++n)
        for (int k = 0; k < grid.k_parts; ++k) {
          const Range piece = whole ? Range{0, (grid.columns[static_cast<std::size_t>(n)].size() + kPanelRows - 1) /
                                                   kPanelRows}
                                    : grid.weight_piece(m, n);
          most = std::max(most, static_cast<std::uint32_t>(piece.size()) * weight_block_bytes(step_index, grid, k));
        }
    return most;
  }

  void add_gemm_task(int index, int tile, const Place& weights, std::int64_t first_block, std::int64_t blocks, int m,
                     int k) {
    if (blocks <= 0) return;
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    Task task;
    task.kind = TaskKind::Gemm;
    task.op = index;
    task.superstep = phase_of(index);
    task.tile = tile;
    task.weights = weights;
    task.activation = lir_.value_places[static_cast<std::size_t>(op.inputs[0])];
    task.output = lir_.value_places[static_cast<std::size_t>(op.output)];
    task.k_steps = op.grid.ks[static_cast<std::size_t>(k)].size();
    task.first_column_block = first_block;
    task.column_blocks = blocks;
    task.panels = (op.grid.rows[static_cast<std::size_t>(m)].size() + kPanelRows - 1) / kPanelRows;
    lir_.tasks.push_back(std::move(task));
  }

  // Moved weights: before the GEMM, every tile of row part m multicasts its
  // piece of the (n, k) block to the other row parts' tiles, into a buffer
  // that holds the whole block on each. A tile then runs its own piece from
  // where it is stored and the gathered blocks before and after it. Staged
  // pieces sit where kernels do not read (standard memory): each tile
  // sends its own piece to itself too and runs the gathered block whole.
  void add_gemm(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const GemmGrid& grid = op.grid;
    const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
    const Weight& weight = chain_.weights[static_cast<std::size_t>(step.weight)];
    const bool gather_own = grid.weights_moved && program_.staged_weights && weight.per_iteration;
    const Place weights = weight_place(weight.parameter, BufferKind::Weight, weight_bytes(op.step, grid, false),
                                       weight.per_iteration, gather_own);
    lir_.op_weights[index] = weights;
    Place gathered;
    if (grid.weights_moved) {
      Buffer buffer{op.name + ".weights", BufferKind::GatheredWeight};
      buffer.bytes = weight_bytes(op.step, grid, true);
      buffer.lifetime = Lifetime{phase_of(index), phase_of(index), false};
      gathered = Place{add_buffer(std::move(buffer)), 0, 0, 0};
    }
    for (int m = 0; m < grid.row_parts; ++m)
      for (int n = 0; n < grid.column_parts; ++n)
        for (int k = 0; k < grid.k_parts; ++k) {
          const int tile = grid.tile(m, n, k);
          const std::int64_t blocks = (grid.columns[static_cast<std::size_t>(n)].size() + kPanelRows - 1) / kPanelRows;
          if (!grid.weights_moved) {
            add_gemm_task(index, tile, weights, 0, blocks, m, k);
            continue;
          }
          const std::uint32_t block_bytes = weight_block_bytes(op.step, grid, k);
          const Range own = grid.weight_piece(m, n);
          if (own.size() > 0) {
            Transfer transfer;
            transfer.phase = phase_of(index);
            transfer.op = index;
            transfer.source_tile = tile;
            for (int other = 0; other < grid.row_parts; ++other)
              if (other != m || gather_own) transfer.destination_tiles.push_back(grid.tile(other, n, k));
            transfer.source = weights;
            transfer.destination = gathered.plus(static_cast<std::uint32_t>(own.begin) * block_bytes);
            transfer.bytes = static_cast<std::uint32_t>(own.size()) * block_bytes;
            transfer.what = fmt::format("{} weights, column blocks {}..{} of part {} k part {}", weight.parameter,
                                        own.begin, own.end, n, k);
            if (!transfer.destination_tiles.empty()) lir_.transfers.push_back(std::move(transfer));
          }
          if (gather_own) {
            add_gemm_task(index, tile, gathered, 0, blocks, m, k);
            continue;
          }
          add_gemm_task(index, tile, weights, own.begin, own.size(), m, k);
          add_gemm_task(index, tile, gathered, 0, own.begin, m, k);
          add_gemm_task(index, tile, gathered.plus(static_cast<std::uint32_t>(own.end) * block_bytes), own.end,
                        blocks - own.end, m, k);
        }
  }

  // The bias of an epilogue, one word per output column a tile holds.
  Place bias_buffer(const std::vector<EpilogueOp>& epilogue, const Layout& layout) {
    for (const EpilogueOp& step : epilogue) {
      if (step.kind != EpilogueOp::Kind::AddBias) continue;
      const Weight& bias = chain_.weights[static_cast<std::size_t>(step.weight)];
      if (bias.storage.element != ElementType::F16 && bias.storage.element != ElementType::F32)
        throw_failure(fmt::format("op '{}'", step.op_name), "the compiler supports f16 and f32 biases only");
      const std::int64_t most = layout.widest();
      Place place = weight_place(bias.parameter, BufferKind::Bias, static_cast<std::uint32_t>(most) * 4, bias.per_iteration);
      lir_.bias_places[step.weight] = place;
      return place;
    }
    return Place{};
  }

  void add_reduce(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const GemmGrid& grid = op.grid;
    const MidValue& partial = value(op.inputs[0]);
    const MidValue& output = value(op.output);
    const std::uint32_t partial_column = column_bytes(partial);
    const Place partial_place = lir_.value_places[static_cast<std::size_t>(op.inputs[0])];
    Place bias = bias_buffer(op.epilogue, output.layout);
    int slots = -1;
    std::uint32_t slot_bytes = 0;
    if (grid.k_parts > 1) {
      const std::int64_t widest = output.layout.widest();
      slot_bytes = round_up(static_cast<std::uint32_t>(widest) * partial_column, 16);
      Buffer buffer{op.name + ".received", BufferKind::ReceiveSlots};
      buffer.bytes = slot_bytes * static_cast<std::uint32_t>(grid.k_parts - 1);
      buffer.lifetime = Lifetime{phase_of(index), phase_of(index), false};
      slots = add_buffer(std::move(buffer));
    }
    for (int m = 0; m < grid.row_parts; ++m)
    for (int n = 0; n < grid.column_parts; ++n) {
      const Range columns = grid.columns[static_cast<std::size_t>(n)];
      for (int k = 0; k < grid.k_parts; ++k) {
        // Output column part (n, k) is the k-th share of column part n.
        const Range share = output.layout.cols[static_cast<std::size_t>(n * grid.k_parts + k)];
        const std::uint32_t share_offset = static_cast<std::uint32_t>(share.begin - columns.begin) * partial_column;
        for (int source = 0; source < grid.k_parts && slots >= 0; ++source) {
          if (source == k) continue;
          Transfer transfer;
          transfer.phase = phase_of(index);
          transfer.op = index;
          transfer.source_tile = grid.tile(m, n, source);
          transfer.destination_tiles = {grid.tile(m, n, k)};
          transfer.source = partial_place.plus(share_offset);
          int slot = source < k ? source : source - 1;
          transfer.destination = Place{slots, static_cast<std::uint32_t>(slot) * slot_bytes, 0, 0};
          transfer.bytes = static_cast<std::uint32_t>(share.size()) * partial_column;
          transfer.what = fmt::format("{} partial sums, columns {}..{}", output.name, share.begin, share.end);
          lir_.transfers.push_back(std::move(transfer));
        }
        // The order the plan-order reference sums in (summation_order.h).
        std::vector<Place> inputs;
        for (int source : reduction_order(grid.k_parts, k)) {
          const int slot = source < k ? source : source - 1;
          inputs.push_back(source == k ? partial_place.plus(share_offset)
                                       : Place{slots, static_cast<std::uint32_t>(slot) * slot_bytes, 0, 0});
        }
        Task task;
        task.kind = TaskKind::Combine;
        task.op = index;
        task.superstep = phase_of(index);
        task.tile = grid.tile(m, n, k);
        task.columns = share.size();
        task.column_elements = grid.piece_panels * kPanelRows;
        // Passes of at most kMaxCombineInputs inputs, summing in place into
        // the tile's own partial sums, before the last pass.
        while (inputs.size() > static_cast<std::size_t>(kMaxCombineInputs)) {
          Task pass = task;
          pass.partial_sum = true;
          pass.inputs.assign(inputs.begin(), inputs.begin() + kMaxCombineInputs);
          pass.output = inputs.front();
          lir_.tasks.push_back(std::move(pass));
          inputs.erase(inputs.begin() + 1, inputs.begin() + kMaxCombineInputs);
        }
        task.inputs = std::move(inputs);
        task.output = lir_.value_places[static_cast<std::size_t>(op.output)];
        task.bias = bias;
        lir_.tasks.push_back(std::move(task));
      }
    }
  }

  // Elementwise: each tile's piece of the output from its pieces of the
  // inputs (and of a table, a parameter stored as the output's piece).
  void add_map(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const MidValue& output = value(op.output);
    Place bias = bias_buffer(op.epilogue, output.layout);
    const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
    Place table;
    if (step.table >= 0) {
      const Weight& weight = chain_.weights[static_cast<std::size_t>(step.table)];
      table = weight_place(weight.parameter, BufferKind::Weight,
                           static_cast<std::uint32_t>(output.layout.widest()) * column_bytes(output), false);
      lir_.tables[index] = table;
    }
    for (int block = 0; block < output.layout.blocks(); ++block)
      for (int tile : output.layout.block_tiles(block)) {
        Task task;
        task.kind = TaskKind::Combine;
        task.op = index;
        task.superstep = phase_of(index);
        task.tile = tile;
        for (int input : op.inputs) task.inputs.push_back(lir_.value_places[static_cast<std::size_t>(input)]);
        if (table.buffer >= 0) task.inputs.push_back(table);
        task.output = lir_.value_places[static_cast<std::size_t>(op.output)];
        task.bias = bias;
        task.columns = output.layout.block_cols(block).size();
        task.column_elements = output.layout.piece_panels * kPanelRows;
        lir_.tasks.push_back(std::move(task));
      }
  }

  // One task per tile of the output's layout: the statistics over every
  // column of the rows (each tile holds them all), its columns of the
  // output.
  // gamma and beta as FP32 pairs {gamma[c], beta[c]}, the kernel's form,
  // for each tile's output columns.
  Place layernorm_pairs(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
    if (step.kind != StepKind::LayerNorm) return Place{};
    const Weight& gamma = chain_.weights[static_cast<std::size_t>(step.gamma)];
    const Weight& beta = chain_.weights[static_cast<std::size_t>(step.beta)];
    if (gamma.storage.element != ElementType::F32 || beta.storage.element != ElementType::F32)
      throw_failure(fmt::format("op '{}'", step.name), "the compiler needs layernorm's gamma and beta in f32");
    const Place pairs = weight_place(gamma.parameter + "+" + beta.parameter, BufferKind::Weight,
                                     static_cast<std::uint32_t>(value(op.output).layout.widest()) * 8,
                                     gamma.per_iteration);
    lir_.row_weights[index] = pairs;
    return pairs;
  }

  // Whole rows: one task per tile of the output's layout, the statistics
  // over every column of its rows, its columns of the output.
  void add_row_op(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const Layout& layout = value(op.output).layout;
    const Place pairs = layernorm_pairs(index);
    for (int block = 0; block < layout.blocks(); ++block) {
      Task task;
      task.kind = op.kind == MidOpKind::LayerNorm ? TaskKind::LayerNorm : TaskKind::Softmax;
      task.op = index;
      task.superstep = phase_of(index);
      task.tile = layout.block_tiles(block).front();
      task.inputs.push_back(lir_.value_places[static_cast<std::size_t>(op.inputs[0])]);
      task.output = lir_.value_places[static_cast<std::size_t>(op.output)];
      task.columns = layout.block_cols(block).size();
      task.column_elements = layout.piece_panels * kPanelRows;
      task.panels = panels_of(layout.block_rows(block));
      task.weights = pairs;
      lir_.tasks.push_back(std::move(task));
    }
  }

  static std::int64_t panels_of(Range rows) { return (rows.size() + kPanelRows - 1) / kPanelRows; }

  // A resident buffer of the compiler's own data: `contents` for every
  // tile, or one list per group tile.
  Place add_constant(const std::string& name, std::vector<std::vector<std::uint8_t>> contents) {
    std::size_t most = 0;
    for (const auto& bytes : contents) most = std::max(most, bytes.size());
    Buffer buffer{name, BufferKind::Constant};
    buffer.bytes = static_cast<std::uint32_t>(most);
    buffer.lifetime.resident = true;
    const int id = add_buffer(std::move(buffer));
    lir_.constants.push_back(ConstantData{id, std::move(contents)});
    return Place{id, 0, 0, 0};
  }

  static std::vector<std::uint8_t> float_bytes(const std::vector<float>& values) {
    std::vector<std::uint8_t> bytes(values.size() * 4);
    if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());  // no data() to copy from when empty
    return bytes;
  }

  // How the split row op whose statistics `op` gathers runs (the search
  // chose it with the same figures).
  SplitRowPlan split_plan(const MidOp& op) const {
    const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
    const Layout& layout = value(op.output).layout;
    const RowKernel kernel = step.kind == StepKind::LayerNorm ? RowKernel::LayerNorm : RowKernel::Softmax;
    return split_row_plan(kernel, value(op.inputs[0]).storage.element, step.result.element, layout.piece_panels,
                          layout.widest(), layout.col_parts());
  }

  // Split columns, first half: each tile's statistics of its block over its
  // columns, into its slot (column part c) of the statistics buffer, which
  // holds a slot per column part; several ranges' slots are merged first.
  void add_row_statistics(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const Layout& layout = value(op.output).layout;
    const SplitRowPlan plan = split_plan(op);
    const Place statistics = lir_.value_places[static_cast<std::size_t>(op.output)];
    const std::uint32_t slot = static_cast<std::uint32_t>(row_statistics_bytes(layout.piece_panels));
    Place own;
    Place own_counts;
    if (plan.ranges > 1) {
      Buffer buffer{op.name + ".ranges", BufferKind::Scratch};
      buffer.bytes = slot * static_cast<std::uint32_t>(plan.ranges);
      buffer.lifetime = Lifetime{phase_of(index), phase_of(index), false};
      own = Place{add_buffer(std::move(buffer)), 0, 0, 0};
      std::vector<std::vector<std::uint8_t>> counts;
      for (int tile = 0; tile < groups().group_size; ++tile) {
        std::vector<float> of_ranges;
        const Range columns = layout.columns_on(tile);
        for (int range = 0; range < plan.ranges && columns.size() > 0; ++range)
          of_ranges.push_back(static_cast<float>(split_row_range_columns(columns.size(), plan.ranges, range)));
        counts.push_back(float_bytes(of_ranges));
      }
      own_counts = add_constant(op.name + ".range counts", std::move(counts));
    }
    for (int block = 0; block < layout.blocks(); ++block) {
      const int c = block % layout.col_parts();
      const Place slot_place = statistics.plus(static_cast<std::uint32_t>(c) * slot);
      Task task;
      task.kind = TaskKind::RowStatistics;
      task.op = index;
      task.superstep = phase_of(index);
      task.tile = layout.block_tiles(block).front();
      task.inputs.push_back(lir_.value_places[static_cast<std::size_t>(op.inputs[0])]);
      task.output = plan.ranges > 1 ? own : slot_place;
      task.columns = layout.block_cols(block).size();
      task.column_elements = layout.piece_panels * kPanelRows;
      task.panels = panels_of(layout.block_rows(block));
      task.ranges = plan.ranges;
      if (task.columns == 0) continue;
      lir_.tasks.push_back(task);
      if (plan.ranges == 1) continue;
      Task merge = task;
      merge.kind = TaskKind::RowMerge;
      merge.inputs = {own};
      merge.output = slot_place;
      merge.slots = plan.ranges;
      merge.counts = own_counts;
      merge.total_columns = task.columns;
      lir_.tasks.push_back(std::move(merge));
    }
  }

  // Split columns, second half: every tile's slot to every other tile of
  // its row part (one multicast), then the result over its block from
  // every slot, or from their merge.
  void add_row_apply(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const Layout& layout = value(op.output).layout;
    const SplitRowPlan plan = split_plan(op);
    const Place statistics = lir_.value_places[static_cast<std::size_t>(op.inputs[1])];
    const std::uint32_t slot = static_cast<std::uint32_t>(row_statistics_bytes(layout.piece_panels));
    const int parts = layout.col_parts();
    for (int block = 0; block < layout.blocks(); ++block) {
      const int r = block / parts, c = block % parts;
      Transfer transfer;
      transfer.phase = phase_of(index);
      transfer.op = index;
      transfer.source_tile = layout.tiles_of(r, c).front();
      for (int other = 0; other < parts; ++other)
        if (other != c) transfer.destination_tiles.push_back(layout.tiles_of(r, other).front());
      transfer.source = transfer.destination = statistics.plus(static_cast<std::uint32_t>(c) * slot);
      transfer.bytes = slot;
      transfer.what = fmt::format("{} statistics of rows {}..{} columns {}..{}", op.name, layout.rows[static_cast<std::size_t>(r)].begin,
                                  layout.rows[static_cast<std::size_t>(r)].end, layout.cols[static_cast<std::size_t>(c)].begin,
                                  layout.cols[static_cast<std::size_t>(c)].end);
      if (!transfer.destination_tiles.empty()) lir_.transfers.push_back(std::move(transfer));
    }
    std::vector<float> part_counts;
    for (const Range& columns : layout.cols) part_counts.push_back(static_cast<float>(columns.size()));
    const std::int64_t total = value(op.output).cols;
    const Place counts = add_constant(op.name + ".part counts", {float_bytes(part_counts)});
    Place merged;
    Place merged_count;
    if (plan.merge_received) {
      Buffer buffer{op.name + ".merged", BufferKind::Scratch};
      buffer.bytes = slot;
      buffer.lifetime = Lifetime{phase_of(index), phase_of(index), false};
      merged = Place{add_buffer(std::move(buffer)), 0, 0, 0};
      merged_count = add_constant(op.name + ".row count", {float_bytes({static_cast<float>(total)})});
    }
    const Place pairs = layernorm_pairs(index);
    for (int block = 0; block < layout.blocks(); ++block) {
      Task task;
      task.op = index;
      task.superstep = phase_of(index);
      task.tile = layout.block_tiles(block).front();
      task.columns = layout.block_cols(block).size();
      task.column_elements = layout.piece_panels * kPanelRows;
      task.panels = panels_of(layout.block_rows(block));
      task.total_columns = total;
      if (task.columns == 0) continue;
      if (plan.merge_received) {
        Task merge = task;
        merge.kind = TaskKind::RowMerge;
        merge.inputs = {statistics};
        merge.output = merged;
        merge.slots = parts;
        merge.counts = counts;
        lir_.tasks.push_back(std::move(merge));
      }
      task.kind = TaskKind::RowApply;
      task.inputs = {lir_.value_places[static_cast<std::size_t>(op.inputs[0])], plan.merge_received ? merged : statistics};
      task.output = lir_.value_places[static_cast<std::size_t>(op.output)];
      task.weights = pairs;
      task.ranges = plan.apply_ranges;
      task.slots = plan.merge_received ? 1 : parts;
      task.counts = plan.merge_received ? merged_count : counts;
      lir_.tasks.push_back(std::move(task));
    }
  }

  AttentionShape attention_shape(const MidOp& op) const {
    const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
    return compiler::attention_shape(
        chain_, step, AttentionCandidate{op.attention_head_parts, op.attention_query_parts, op.attention_key_parts},
        groups().chunk_panels);
  }

  AttentionKernels attention_kernels_of(const MidOp& op) const {
    const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
    return attention_kernels(attention_shape(op), value(op.inputs[0]).storage.element, step.result.element);
  }

  Place scratch_buffer(const std::string& name, std::uint32_t bytes, int phase) {
    if (bytes == 0) return Place{};
    Buffer buffer{name, BufferKind::Scratch};
    buffer.bytes = bytes;
    buffer.lifetime = Lifetime{phase, phase, false};
    return Place{add_buffer(std::move(buffer)), 0, 0, 0};
  }

  // The 16x16 identity in `type`, the transpose's activation operand.
  Place identity(ElementType type) {
    auto it = identities_.find(type);
    if (it != identities_.end()) return it->second;
    const std::uint32_t bytes = element_bytes(type);
    std::vector<std::uint8_t> contents(16 * 16 * bytes, 0);
    for (int i = 0; i < 16; ++i) {
      std::uint8_t* one = contents.data() + static_cast<std::size_t>((i * 16 + i) * bytes);
      if (type == ElementType::F16) {
        one[1] = 0x3c;  // 1.0 in FP16: 0x3c00
      } else {
        const float value = 1.0f;
        std::memcpy(one, &value, 4);
      }
    }
    const Place place = add_constant(fmt::format("identity {}", element_type_name(type)), {std::move(contents)});
    identities_.emplace(type, place);
    return place;
  }

  // Each tile's share (attention_candidates.h), head after head: v
  // transposed, the scores, the softmax (one run, or three over column
  // chunks), P v into the output's head columns or the tile's partial.
  void add_attention(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const AttentionShape shape = attention_shape(op);
    const AttentionKernels kernels = attention_kernels_of(op);
    const int phase = phase_of(index);
    // v and k may hold S and P when this step is all that reads them.
    auto last_read_here = [&](int input) {
      const Buffer& buffer = lir_.buffers[static_cast<std::size_t>(lir_.value_places[static_cast<std::size_t>(input)].buffer)];
      int readers = 0;
      for (const MidOp& reader : program_.ops)
        readers += static_cast<int>(std::count(reader.inputs.begin(), reader.inputs.end(), input));
      return buffer.kind == BufferKind::Value && readers == 1 && !loop_carried_value(input);
    };
    const AttentionScratch sizes =
        attention_scratch(shape, kernels, last_read_here(op.inputs[1]) && last_read_here(op.inputs[2]));
    AttentionWork work;
    work.q = lir_.value_places[static_cast<std::size_t>(op.inputs[0])];
    work.k = lir_.value_places[static_cast<std::size_t>(op.inputs[1])];
    work.v = lir_.value_places[static_cast<std::size_t>(op.inputs[2])];
    work.identity = identity(value(op.inputs[0]).storage.element);
    work.transposed = scratch_buffer(op.name + ".transposed", sizes.transposed, phase);
    work.scores = sizes.scores_in_v ? work.v : scratch_buffer(op.name + ".scores", sizes.scores, phase);
    work.probabilities =
        sizes.probabilities_in_k ? work.k : scratch_buffer(op.name + ".probabilities", sizes.probabilities, phase);
    work.chunk_statistics = scratch_buffer(op.name + ".chunk statistics", sizes.chunk_statistics, phase);
    const Place output = lir_.value_places[static_cast<std::size_t>(op.output)];
    const bool partial = shape.candidate.key_parts > 1;
    work.output = output;
    if (partial) work.statistics = output.plus(sizes.partial);
    const std::vector<Range> queries = shape.query_panels(), keys = shape.key_panels();
    const AttentionCandidate& c = shape.candidate;
    for (std::int64_t s = 0; s < shape.segments; ++s)
      for (int j = 0; j < c.query_parts; ++j)
        for (int g = 0; g < c.head_parts; ++g)
          for (int b = 0; b < c.key_parts; ++b) {
            Task task;
            task.kind = TaskKind::Attention;
            task.op = index;
            task.superstep = phase;
            task.tile = shape.tile(s, j, g, b);
            task.attention = work;
            task.attention.query_panels = queries[static_cast<std::size_t>(j)].size();
            task.attention.key_panels = keys[static_cast<std::size_t>(b)].size();
            task.attention.valid_keys = shape.valid_keys(b);
            for (std::int64_t h = 0; h < shape.heads_per_tile(); ++h) {
              task.attention.head = static_cast<int>(h);
              std::vector<AttentionStage> stages{AttentionStage::Transpose, AttentionStage::Scores};
              if (kernels.softmax_chunks == 1)
                stages.push_back(AttentionStage::Softmax);
              else
                stages.insert(stages.end(), {AttentionStage::SoftmaxMax, AttentionStage::SoftmaxExp,
                                             AttentionStage::SoftmaxFinish});
              stages.push_back(AttentionStage::Output);
              for (AttentionStage stage : stages) {
                task.attention.stage = stage;
                lir_.tasks.push_back(task);
              }
            }
          }
  }

  // Several key blocks: block (s, j, g)'s partials go to the tiles of the
  // next block, key part b receiving share b of every partial (and every
  // partial's statistics, one multicast), into slots in key part order;
  // each merges its share.
  void add_attention_merge(int index) {
    const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
    const AttentionShape shape = attention_shape(op);
    const AttentionKernels kernels = attention_kernels_of(op);
    const AttentionScratch sizes = attention_scratch(shape, kernels);
    const int phase = phase_of(index);
    const Place partials = lir_.value_places[static_cast<std::size_t>(op.inputs[0])];
    const Place slots = scratch_buffer(op.name + ".slots", sizes.merge, phase);
    const Place workers = scratch_buffer(op.name + ".workers", sizes.merge_workers, phase);
    const AttentionCandidate& c = shape.candidate;
    const std::uint32_t column = kernels.merge.partial_column_stride;
    const std::uint32_t share_bytes = static_cast<std::uint32_t>(shape.merge_share_columns()) * column;
    const int blocks = static_cast<int>(shape.segments) * c.query_parts * c.head_parts;
    const std::vector<Range> queries = shape.query_panels();
    for (int block = 0; block < blocks; ++block) {
      const int next = (block + 1) % blocks;
      for (int i = 0; i < c.key_parts; ++i) {
        const int source = block * c.key_parts + i;
        Transfer statistics;
        statistics.phase = phase;
        statistics.op = index;
        statistics.source_tile = source;
        statistics.source = partials.plus(sizes.partial);
        statistics.destination = slots.plus(static_cast<std::uint32_t>(i) * sizes.merge_slot + share_bytes);
        statistics.bytes = sizes.statistics;
        statistics.what = fmt::format("{} statistics of block {} key part {}", op.name, block, i);
        for (int b = 0; b < c.key_parts; ++b) {
          const Range share = shape.merge_share(b);
          statistics.destination_tiles.push_back(next * c.key_parts + b);
          if (share.size() == 0) continue;
          Transfer transfer;
          transfer.phase = phase;
          transfer.op = index;
          transfer.source_tile = source;
          transfer.destination_tiles = {next * c.key_parts + b};
          transfer.source = partials.plus(static_cast<std::uint32_t>(share.begin) * column);
          transfer.destination = slots.plus(static_cast<std::uint32_t>(i) * sizes.merge_slot);
          transfer.bytes = static_cast<std::uint32_t>(share.size()) * column;
          transfer.what = fmt::format("{} partial of block {} key part {}, columns {}..{}", op.name, block, i,
                                      share.begin, share.end);
          lir_.transfers.push_back(std::move(transfer));
        }
        lir_.transfers.push_back(std::move(statistics));
      }
      const std::int64_t j = (block / c.head_parts) % c.query_parts;
      for (int b = 0; b < c.key_parts; ++b) {
        if (shape.merge_share(b).size() == 0) continue;
        Task task;
        task.kind = TaskKind::Attention;
        task.op = index;
        task.superstep = phase;
        task.tile = next * c.key_parts + b;
        task.attention.stage = AttentionStage::Merge;
        task.attention.query_panels = queries[static_cast<std::size_t>(j)].size();
        task.attention.slots = slots;
        task.attention.workers = workers;
        task.attention.output = lir_.value_places[static_cast<std::size_t>(op.output)];
        task.attention.merged_columns = shape.merge_share(b).size();
        lir_.tasks.push_back(std::move(task));
      }
    }
  }

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

}  // namespace

std::vector<UnreadRun> unread_pixel_runs(const Chain::Patches& patches) {
  const std::size_t rank = patches.image_shape.size();
  const std::int64_t height = patches.image_shape[rank - 3], width = patches.image_shape[rank - 2];
  const std::int64_t channels = patches.image_shape[rank - 1];
  const std::int64_t read_height = height / patches.patch * patches.patch;
  const std::int64_t read_width = width / patches.patch * patches.patch;
  const std::int64_t most = std::max<std::int64_t>(1, kUnreadPieceElements / channels);
  std::vector<UnreadRun> runs;
  for (std::int64_t y = 0; y < height; ++y)
    for (std::int64_t x = y < read_height ? read_width : 0; x < width; x += most)
      runs.push_back(UnreadRun{y, x, std::min(most, width - x)});
  return runs;
}

std::int64_t unread_pixel_pieces(const Chain::Patches& patches) {
  return static_cast<std::int64_t>(unread_pixel_runs(patches).size());
}

std::uint32_t column_bytes(const MidValue& value) {
  return static_cast<std::uint32_t>(value.layout.piece_panels * kPanelRows) * element_bytes(value.storage.element);
}

Lir group_exchanges(const Chain& chain, const MidProgram& program) {
  Lir lir;
  lir.mid = &program;
  lir.chain = &chain;
  LirBuilder builder(chain, program, lir);
  builder.build();
  return lir;
}

}  // namespace tilec::compiler
