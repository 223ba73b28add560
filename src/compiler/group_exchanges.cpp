// group_exchanges: the phases, places, rearranges, GEMMs, reductions and
// maps (row ops and attention: group_exchanges_rows.cpp).
#include "compiler/group_exchanges.h"

#include "compiler/lir_builder.h"

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

}  // namespace

void LirBuilder::build() {
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

int LirBuilder::add_buffer(Buffer buffer) {
  buffer.bytes = round_up(buffer.bytes, 16);
  const bool shared = buffer.kind == BufferKind::ChunkRecord || buffer.kind == BufferKind::IterationRecord;
  buffer.op = shared ? -1 : buffer.value >= 0 ? producer_[static_cast<std::size_t>(buffer.value)] : current_op_;
  lir_.buffers.push_back(std::move(buffer));
  return static_cast<int>(lir_.buffers.size()) - 1;
}

void LirBuilder::widen(int buffer, int phase) {
  Lifetime& life = lir_.buffers[static_cast<std::size_t>(buffer)].lifetime;
  life.first = std::min(life.first, phase);
  life.last = std::max(life.last, phase);
}

void LirBuilder::assign_phases() {
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

void LirBuilder::producers() {
  producer_.assign(program_.values.size(), -1);
  for (std::size_t index = 0; index < program_.ops.size(); ++index)
    producer_[static_cast<std::size_t>(program_.ops[index].output)] = static_cast<int>(index);
}

std::uint32_t LirBuilder::largest_piece(int id) const {
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

bool LirBuilder::drained_into(int id) const {
  int op_index = producer_[static_cast<std::size_t>(id)];
  if (op_index < 0) return false;
  const MidOp& op = program_.ops[static_cast<std::size_t>(op_index)];
  return op.kind == MidOpKind::Reduce && op.grid.k_parts == 1 && op.epilogue.empty() &&
         value(op.inputs[0]).storage == value(id).storage;
}

bool LirBuilder::loop_carried_value(int id) const {
  for (const auto& [end, start] : program_.loop_carried)
    if (end == id || start == id) return true;
  return false;
}

int LirBuilder::first_value_of_input(const std::string& name) const {
  for (const auto& [input, activation] : chain_.inputs)
    if (input == name)
      for (std::size_t id = 0; id < program_.values.size(); ++id)
        if (program_.values[id].activation == activation) return static_cast<int>(id);
  TILEC_CHECK(false, "input '{}' has no value", name);
}

bool LirBuilder::is_host_input(int id) const {
  if (producer_[static_cast<std::size_t>(id)] >= 0) return false;
  for (const auto& [name, activation] : chain_.inputs)
    if (activation == value(id).activation) return true;
  return false;
}

void LirBuilder::place_values() {
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

void LirBuilder::add_op(int index) {
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

void LirBuilder::add_rearrange(int index) {
  const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
  const MidValue& from = value(op.inputs[0]);
  const MidValue& to = value(op.output);
  const std::uint32_t element = element_bytes(to.storage.element);
  const std::uint32_t from_column = column_bytes(from), to_column = column_bytes(to);
  const Place source_base = lir_.value_places[static_cast<std::size_t>(op.inputs[0])];
  const Place destination_base = lir_.value_places[static_cast<std::size_t>(op.output)];
  // Columns are counted in the input's numbering throughout.
  const std::int64_t offset = op.column_offset;
  for (int want = 0; want < to.layout.blocks(); ++want) {
    const Range want_rows = to.layout.block_rows(want);
    const Range want_cols{to.layout.block_cols(want).begin + offset, to.layout.block_cols(want).end + offset};
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
                          ? fmt::format("{} columns {}..{}", to.name, cols.begin - offset, cols.end - offset)
                          : fmt::format("{} rows {}..{} columns {}..{}", to.name, rows.begin, rows.end,
                                        cols.begin - offset, cols.end - offset);
      lir_.transfers.push_back(std::move(transfer));
    }
  }
}

Place LirBuilder::weight_place(const std::string& name, BufferKind kind, std::uint32_t bytes, bool per_iteration,
                   bool sent_only) {
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

void LirBuilder::finish_iteration_record() {
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

std::uint32_t LirBuilder::weight_block_bytes(int step_index, const GemmGrid& grid, int k) const {
  const Step& step = chain_.steps[static_cast<std::size_t>(step_index)];
  const Weight& weight = chain_.weights[static_cast<std::size_t>(step.weight)];
  return static_cast<std::uint32_t>(kPanelRows * grid.ks[static_cast<std::size_t>(k)].size()) *
         element_bytes(weight.storage.element);
}

std::uint32_t LirBuilder::weight_bytes(int step_index, const GemmGrid& grid, bool whole) const {
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

void LirBuilder::add_gemm_task(int index, int tile, const Place& weights, std::int64_t first_block, std::int64_t blocks, int m,
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

void LirBuilder::add_gemm(int index) {
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

Place LirBuilder::bias_buffer(const std::vector<EpilogueOp>& epilogue, const Layout& layout) {
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

void LirBuilder::add_reduce(int index) {
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

void LirBuilder::add_map(int index) {
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
