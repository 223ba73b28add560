// The row ops' and attention's half of group_exchanges (lir_builder.h).
#include "compiler/lir_builder.h"

#include <algorithm>
#include <cstring>

namespace tilec::compiler {

Place LirBuilder::layernorm_pairs(int index) {
  const MidOp& op = program_.ops[static_cast<std::size_t>(index)];
  const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
  if (step.kind != StepKind::LayerNorm) return Place{};
  const Weight& gamma = chain_.weights[static_cast<std::size_t>(step.gamma)];
  const Weight& beta = chain_.weights[static_cast<std::size_t>(step.beta)];
  if (gamma.storage.element != ElementType::F32 || beta.storage.element != ElementType::F32)
    throw_failure(fmt::format("op '{}'", step.name), "the compiler needs layernorm's gamma and beta in f32");
  const Layout& layout = value(op.output).layout;
  const std::string name = gamma.parameter + "+" + beta.parameter;
  if (!gathers_pairs(layout.row_parts(), gamma.per_iteration)) {
    const Place pairs = weight_place(name, BufferKind::Weight, static_cast<std::uint32_t>(layout.widest()) * 8,
                                     gamma.per_iteration);
    lir_.row_weights[index] = pairs;
    return pairs;
  }
  const std::int64_t widest_piece = pair_pieces(layout.widest(), layout.row_parts()).front().size();
  const Place stored = weight_place(name, BufferKind::Weight, static_cast<std::uint32_t>(widest_piece) * 8, true, true);
  lir_.row_weights[index] = stored;
  Buffer buffer{op.name + ".pairs", BufferKind::GatheredWeight};
  buffer.bytes = static_cast<std::uint32_t>(layout.widest()) * 8;
  buffer.lifetime = Lifetime{phase_of(index), phase_of(index), false};
  const Place gathered{add_buffer(std::move(buffer)), 0, 0, 0};
  for (int c = 0; c < layout.col_parts(); ++c) {
    const Range columns = layout.cols[static_cast<std::size_t>(c)];
    const std::vector<Range> pieces = pair_pieces(columns.size(), layout.row_parts());
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      if (pieces[p].size() == 0) continue;
      Transfer transfer;
      transfer.phase = phase_of(index);
      transfer.op = index;
      transfer.source_tile = layout.tiles_of(static_cast<int>(p), c).front();
      for (int r = 0; r < layout.row_parts(); ++r)
        for (int tile : layout.tiles_of(r, c)) transfer.destination_tiles.push_back(tile);
      transfer.source = stored;
      transfer.destination = gathered.plus(static_cast<std::uint32_t>(pieces[p].begin) * 8);
      transfer.bytes = static_cast<std::uint32_t>(pieces[p].size()) * 8;
      transfer.what = fmt::format("{} pairs, columns {}..{}", op.name, columns.begin + pieces[p].begin,
                                  columns.begin + pieces[p].end);
      lir_.transfers.push_back(std::move(transfer));
    }
  }
  return gathered;
}

void LirBuilder::add_row_op(int index) {
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

Place LirBuilder::add_constant(const std::string& name, std::vector<std::vector<std::uint8_t>> contents) {
  std::size_t most = 0;
  for (const auto& bytes : contents) most = std::max(most, bytes.size());
  Buffer buffer{name, BufferKind::Constant};
  buffer.bytes = static_cast<std::uint32_t>(most);
  buffer.lifetime.resident = true;
  const int id = add_buffer(std::move(buffer));
  lir_.constants.push_back(ConstantData{id, std::move(contents)});
  return Place{id, 0, 0, 0};
}

std::vector<std::uint8_t> LirBuilder::float_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());  // no data() to copy from when empty
  return bytes;
}

SplitRowPlan LirBuilder::split_plan(const MidOp& op) const {
  const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
  const Layout& layout = value(op.output).layout;
  const RowKernel kernel = step.kind == StepKind::LayerNorm ? RowKernel::LayerNorm : RowKernel::Softmax;
  return split_row_plan(kernel, value(op.inputs[0]).storage.element, step.result.element, layout.piece_panels,
                        layout.widest(), layout.col_parts());
}

void LirBuilder::add_row_statistics(int index) {
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

void LirBuilder::add_row_apply(int index) {
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

AttentionShape LirBuilder::attention_shape(const MidOp& op) const {
  const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
  return compiler::attention_shape(
      chain_, step, AttentionCandidate{op.attention_head_parts, op.attention_query_parts, op.attention_key_parts},
      groups().chunk_panels);
}

AttentionKernels LirBuilder::attention_kernels_of(const MidOp& op) const {
  const Step& step = chain_.steps[static_cast<std::size_t>(op.step)];
  return attention_kernels(attention_shape(op), value(op.inputs[0]).storage.element, step.result.element);
}

Place LirBuilder::scratch_buffer(const std::string& name, std::uint32_t bytes, int phase) {
  if (bytes == 0) return Place{};
  Buffer buffer{name, BufferKind::Scratch};
  buffer.bytes = bytes;
  buffer.lifetime = Lifetime{phase, phase, false};
  return Place{add_buffer(std::move(buffer)), 0, 0, 0};
}

Place LirBuilder::identity(ElementType type) {
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

void LirBuilder::add_attention(int index) {
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

void LirBuilder::add_attention_merge(int index) {
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

}  // namespace tilec::compiler
