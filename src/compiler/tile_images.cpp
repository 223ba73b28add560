#include "compiler/tile_images.h"

#include "compiler/row_candidates.h"
#include "package/validate.h"
#include "support/error.h"

#include <algorithm>
#include <map>
#include <memory>

namespace tilec::compiler {

namespace {

using package::Piece;

std::uint32_t address_of(const Lir& lir, const Place& place, int chunk = 0, int iteration = 0) {
  return lir.buffers[static_cast<std::size_t>(place.buffer)].address + place.offset +
         static_cast<std::uint32_t>(chunk) * place.chunk_stride +
         static_cast<std::uint32_t>(iteration) * place.iteration_stride;
}

// Axes [0, leading) of `shape` at index `outer` of their product (a
// mixed-radix number), one element each.
void add_leading_axes(Piece& piece, const std::vector<std::int64_t>& shape, std::size_t leading, std::int64_t outer) {
  for (std::size_t axis = 0; axis < leading; ++axis) {
    std::int64_t radix = 1;
    for (std::size_t later = axis + 1; later < leading; ++later) radix *= shape[later];
    piece.start.push_back(outer / radix % shape[axis]);
    piece.size.push_back(1);
    piece.strides.push_back(1);
  }
}

const graph::TensorType& type_of_op(const graph::Graph& graph, const std::string& name) {
  for (const graph::Op& op : graph.ops)
    if (op.name == name && (op.kind == graph::OpKind::Input || op.kind == graph::OpKind::Parameter))
      return graph.type(op.results[0]);
  throw_failure("build_tile_images", "no input or parameter named '{}'", name);
}

const graph::TensorType& type_of_output(const graph::Graph& graph, const std::string& name) {
  for (const auto& [output, value] : graph.outputs)
    if (output == name) return graph.type(value);
  throw_failure("build_tile_images", "no output named '{}'", name);
}

class Binder {
 public:
  explicit Binder(const ImageInputs& inputs) : in_(inputs), lir_(inputs.lir), groups_(inputs.lir.mid->groups) {}

  std::vector<package::Binding> bindings() {
    std::vector<package::Binding> result;
    const Chain& chain = *lir_.chain;
    for (const auto& [name, activation] : chain.inputs) {
      result.push_back(activation_binding(name, package::BindingRole::Input, type_of_op(in_.graph, name),
                                          first_value_of(activation)));
      const auto unread = lir_.unread_pixels.find(name);
      if (unread != lir_.unread_pixels.end())
        add_unread_pixels(result.back(), lir_.chain->patched_inputs.at(name), unread->second);
    }
    for (const auto& [name, activation] : chain.parameter_inputs)
      result.push_back(activation_binding(name, package::BindingRole::Parameter, type_of_op(in_.graph, name),
                                          first_value_of(activation)));
    for (const auto& [gemm, place] : lir_.op_weights) add_weight(result, gemm, place);
    for (const Task& task : lir_.tasks)
      if (task.kind == TaskKind::Combine && task.bias.buffer >= 0 && !task.rows_split) add_bias(result, task);
    for (const auto& [op, place] : lir_.row_weights) add_layernorm_weights(result, op, place);
    for (const auto& [op, place] : lir_.tables) add_table(result, op, place);
    for (const auto& [name, activation] : chain.outputs)
      result.push_back(activation_binding(name, package::BindingRole::Output, type_of_output(in_.graph, name),
                                          last_value_of(activation)));
    return result;
  }

 private:
  int first_value_of(int activation) const {
    for (std::size_t id = 0; id < lir_.mid->values.size(); ++id)
      if (lir_.mid->values[id].activation == activation) return static_cast<int>(id);
    throw_failure("build_tile_images", "activation {} has no value", activation);
  }
  int last_value_of(int activation) const {
    int last = -1;
    for (std::size_t id = 0; id < lir_.mid->values.size(); ++id)
      if (lir_.mid->values[id].activation == activation) last = static_cast<int>(id);
    return last;
  }

  // A host input or output, or a parameter read as an activation: per
  // group, chunk and block, the rows of that chunk the block holds, split
  // where the leading axes change. A parameter is written to every copy.
  package::Binding activation_binding(const std::string& name, package::BindingRole role,
                                      const graph::TensorType& type, int value_id) {
    package::Binding binding{name, role, type, {}};
    const MidValue& value = lir_.mid->values[static_cast<std::size_t>(value_id)];
    const int space = lir_.chain->activations[static_cast<std::size_t>(value.activation)].space;
    // Every chunk computes a shared space's rows; the host reads one copy.
    const bool one_copy = role == package::BindingRole::Output && groups_.spaces[static_cast<std::size_t>(space)].shared;
    const Layout& layout = value.layout;
    const Place place = lir_.value_places[static_cast<std::size_t>(value_id)];
    // A shared value every chunk reads in one place is written there once.
    const bool one_chunk = one_copy || (groups_.spaces[static_cast<std::size_t>(space)].shared && place.chunk_stride == 0);
    const std::uint32_t element = element_bytes(value.storage.element);
    const std::int64_t column_stride = layout.piece_panels * kPanelRows;
    const std::size_t rank = type.shape.size();
    const std::int64_t last_rows = rank >= 2 ? type.shape[rank - 2] : 1;
    for (int group = 0; group < (one_copy ? 1 : groups_.groups); ++group)
      for (int chunk = 0; chunk < (one_chunk ? 1 : groups_.chunks); ++chunk) {
        const Range chunk_rows =
            groups_.space_rows(groups_.rows[static_cast<std::size_t>(group)][static_cast<std::size_t>(chunk)], space);
        for (int r = 0; r < layout.row_parts(); ++r)
          for (int c = 0; c < layout.col_parts(); ++c) {
            const Range columns = layout.cols[static_cast<std::size_t>(c)];
            const Range block_rows = layout.rows[static_cast<std::size_t>(r)];
            const Range rows{chunk_rows.begin + block_rows.begin,
                             std::min(chunk_rows.end, chunk_rows.begin + block_rows.end)};
            if (columns.size() == 0 || rows.size() <= 0) continue;  // a K part that reduces no column; padding
            const std::span<const int> tiles = layout.tiles_of(r, c);
            // The host writes an input once: a replica would never see it.
            TILEC_CHECK(role != package::BindingRole::Input || tiles.size() == 1,
                        "input '{}' bound to {} replicas of columns {}..{}", name, tiles.size(), columns.begin,
                        columns.end);
            const std::uint32_t tile = static_cast<std::uint32_t>(groups_.tile_of(group, tiles.front()));
            const std::size_t copies = role == package::BindingRole::Parameter ? tiles.size() : 1;
            const auto patched = lir_.chain->patched_inputs.find(name);
            if (patched != lir_.chain->patched_inputs.end()) {
              for (const GroupPlan::RowRun& run : groups_.graph_runs(rows))
                add_patch_pieces(binding, patched->second, run, columns, tile,
                                 address_of(lir_, place, chunk) +
                                     static_cast<std::uint32_t>(run.device_row - rows.begin) * element,
                                 column_stride);
              continue;
            }
            for (const GroupPlan::RowRun& run : groups_.graph_runs(rows, space))
              for (std::int64_t row = run.graph_row; row < run.graph_row + run.count;) {
                // Rows up to the end of the current run of the second-to-last axis.
                std::int64_t run_end = std::min(run.graph_row + run.count, (row / last_rows + 1) * last_rows);
                Piece piece;
                piece.tile = tile;
                piece.address = address_of(lir_, place, chunk) +
                                static_cast<std::uint32_t>(run.device_row + (row - run.graph_row) - rows.begin) * element;
                add_leading_axes(piece, type.shape, rank >= 2 ? rank - 2 : 0, row / last_rows);
                if (rank >= 2) {
                  piece.start.push_back(row % last_rows);
                  piece.size.push_back(run_end - row);
                  piece.strides.push_back(1);
                }
                piece.start.push_back(columns.begin);
                piece.size.push_back(columns.size());
                piece.strides.push_back(column_stride);
                for (std::size_t copy = 1; copy < copies; ++copy) {
                  binding.pieces.push_back(piece);
                  binding.pieces.back().tile = static_cast<std::uint32_t>(groups_.tile_of(group, tiles[copy]));
                }
                binding.pieces.push_back(std::move(piece));
                row = run_end;
              }
          }
      }
    return binding;
  }

  // A host input read as patches: patch row r's columns `columns`, whose
  // first element is at `address` (columns `column_stride` elements
  // apart), hold pixels of the image: column (i p + j) C + c of patch
  // (py, px) is pixel (py p + i, px p + j, c). Each run of one pixel row
  // i, from a pixel's first channel or not, is a block of the image.
  static void add_patch_pieces(package::Binding& binding, const Chain::Patches& patches, const GroupPlan::RowRun& run,
                               Range columns, std::uint32_t tile, std::uint32_t address, std::int64_t column_stride) {
    const std::vector<std::int64_t>& image = patches.image_shape;
    const std::size_t rank = image.size();
    const std::int64_t p = patches.patch, channels = image[rank - 1];
    const std::int64_t across = image[rank - 2] / p, patches_per_image = image[rank - 3] / p * across;
    const std::uint32_t element = element_bytes(binding.type.storage.element);
    for (std::int64_t row = run.graph_row; row < run.graph_row + run.count; ++row) {
      const std::int64_t item = row / patches_per_image, patch = row % patches_per_image;
      const std::int64_t py = patch / across, px = patch % across;
      for (std::int64_t column = columns.begin; column < columns.end;) {
        const std::int64_t i = column / (p * channels), j = column / channels % p, c = column % channels;
        // Whole pixels up to the end of the pixel row (or of the columns),
        // or what is left of a first pixel.
        const std::int64_t row_end = std::min(columns.end, (i + 1) * p * channels);
        const std::int64_t whole = c == 0 ? (row_end - column) / channels : 0;
        const std::int64_t pixels = std::max<std::int64_t>(whole, 1);
        const std::int64_t count = whole > 0 ? channels : std::min(channels - c, row_end - column);
        Piece piece;
        piece.tile = tile;
        piece.address = address + static_cast<std::uint32_t>((column - columns.begin) * column_stride +
                                                             (row - run.graph_row)) * element;
        add_leading_axes(piece, image, rank - 3, item);
        piece.start.insert(piece.start.end(), {py * p + i, px * p + j, c});
        piece.size.insert(piece.size.end(), {1, pixels, count});
        piece.strides.insert(piece.strides.end(), {1, channels * column_stride, column_stride});
        binding.pieces.push_back(std::move(piece));
        column += pixels * count;
      }
    }
  }

  // The pixels no patch reads, per group and chunk: each image of the
  // chunk's pieces (unread_pixel_runs), piece k of the chunk on group tile
  // k mod group size, in its slot k / group size.
  void add_unread_pixels(package::Binding& binding, const Chain::Patches& patches, const Place& place) {
    const std::vector<UnreadRun> runs = unread_pixel_runs(patches);
    const std::vector<std::int64_t>& image = patches.image_shape;
    const std::size_t rank = image.size();
    const std::int64_t channels = image[rank - 1];
    const std::uint32_t element = element_bytes(binding.type.storage.element);
    const std::int64_t segment_rows = groups_.segment_rows;
    for (int group = 0; group < groups_.groups; ++group)
      for (int chunk = 0; chunk < groups_.chunks; ++chunk) {
        const Range rows = groups_.rows[static_cast<std::size_t>(group)][static_cast<std::size_t>(chunk)];
        std::int64_t piece_index = 0;
        for (const GroupPlan::RowRun& run : groups_.graph_runs(rows)) {
          if (run.graph_row % segment_rows != 0) continue;
          const std::int64_t item = run.graph_row / segment_rows;
          for (const UnreadRun& pixels : runs) {
            Piece piece;
            piece.tile = static_cast<std::uint32_t>(groups_.tile_of(group, static_cast<int>(piece_index % groups_.group_size)));
            piece.address = address_of(lir_, place, chunk) +
                            static_cast<std::uint32_t>(piece_index / groups_.group_size * kUnreadPieceElements) * element;
            add_leading_axes(piece, image, rank - 3, item);
            piece.start.insert(piece.start.end(), {pixels.y, pixels.x, 0});
            piece.size.insert(piece.size.end(), {1, pixels.pixels, channels});
            piece.strides.insert(piece.strides.end(), {1, channels, 1});
            binding.pieces.push_back(std::move(piece));
            ++piece_index;
          }
        }
      }
  }

  // A table added to every segment: on each tile of the output's layout,
  // the rows of its block as rows of one segment (the same for every
  // group and chunk: chunks hold whole segments).
  void add_table(std::vector<package::Binding>& bindings, int op_index, const Place& place) {
    const MidOp& op = lir_.mid->ops[static_cast<std::size_t>(op_index)];
    const Step& step = lir_.chain->steps[static_cast<std::size_t>(op.step)];
    const Weight& weight = lir_.chain->weights[static_cast<std::size_t>(step.table)];
    package::Binding& binding = binding_for(bindings, weight.parameter);
    const MidValue& output = lir_.mid->values[static_cast<std::size_t>(op.output)];
    const Layout& layout = output.layout;
    const std::uint32_t element = element_bytes(weight.storage.element);
    const std::int64_t column_stride = layout.piece_panels * kPanelRows;
    for (int group = 0; group < groups_.groups; ++group)
      for (int block = 0; block < layout.blocks(); ++block) {
        const Range columns = layout.block_cols(block);
        const Range rows = layout.block_rows(block);
        if (columns.size() == 0) continue;
        for (int tile : layout.block_tiles(block))
          for (const GroupPlan::RowRun& run : groups_.graph_runs(rows)) {
            Piece piece;
            piece.tile = static_cast<std::uint32_t>(groups_.tile_of(group, tile));
            piece.address = address_of(lir_, place) + static_cast<std::uint32_t>(run.device_row - rows.begin) * element;
            piece.start = {run.graph_row % groups_.segment_rows, columns.begin};
            piece.size = {run.count, columns.size()};
            piece.strides = {1, column_stride};
            binding.pieces.push_back(std::move(piece));
          }
      }
  }

  package::Binding& binding_for(std::vector<package::Binding>& bindings, const std::string& name) {
    for (package::Binding& binding : bindings)
      if (binding.name == name) return binding;
    bindings.push_back(package::Binding{name, package::BindingRole::Parameter, type_of_op(in_.graph, name), {}});
    return bindings.back();
  }

  // Iterations a per-iteration place repeats over (1 otherwise).
  int iterations(const Place& place) const {
    return place.iteration_stride ? static_cast<int>(lir_.mid->repeat_count) : 1;
  }

  // The graph weight that holds output column `column` of a weight (a
  // joined weight's part, or the weight itself), and the column in it.
  std::pair<const Weight*, std::int64_t> weight_column(const Weight& weight, std::int64_t column,
                                                        bool transposed) const {
    for (int part : weight.joined) {
      const Weight& w = lir_.chain->weights[static_cast<std::size_t>(part)];
      const std::int64_t width = w.columns(transposed);
      if (column < width) return {&w, column};
      column -= width;
    }
    TILEC_CHECK(weight.joined.empty(), "a column past the joined weight '{}'", weight.parameter);
    return {&weight, column};
  }

  void add_weight(std::vector<package::Binding>& bindings, int gemm, const Place& place) {
    const MidOp& op = lir_.mid->ops[static_cast<std::size_t>(gemm)];
    const Step& step = lir_.chain->steps[static_cast<std::size_t>(op.step)];
    const Weight& weight = lir_.chain->weights[static_cast<std::size_t>(step.weight)];
    const std::uint32_t element = element_bytes(weight.storage.element);
    const bool leading = weight.per_iteration;
    // Each tile of block (m, n, k) stores its piece of the (n, k) weights:
    // all of them unless weights move.
    for (int group = 0; group < groups_.groups; ++group)
      for (int m = 0; m < op.grid.row_parts; ++m)
        for (int n = 0; n < op.grid.column_parts; ++n)
          for (int k = 0; k < op.grid.k_parts; ++k) {
          const Range columns = op.grid.columns[static_cast<std::size_t>(n)];
          const Range ks = op.grid.ks[static_cast<std::size_t>(k)];
          const Range stored = op.grid.weight_piece(m, n);
          const std::uint32_t tile = static_cast<std::uint32_t>(groups_.tile_of(group, op.grid.tile(m, n, k)));
          for (int iteration = 0; iteration < iterations(place); ++iteration)
            for (std::int64_t block = stored.begin; block < stored.end; ++block) {
              // A block lies in one graph weight (fuse_gemms.cpp).
              const auto [source, first] = weight_column(weight, columns.begin + block * kPanelRows,
                                                         step.transpose_weight);
              const std::int64_t width = std::min<std::int64_t>(kPanelRows, columns.end - columns.begin - block * kPanelRows);
              package::Binding& binding = binding_for(bindings, source->parameter);
              Piece piece;
              piece.tile = tile;
              piece.address = address_of(lir_, place, 0, iteration) +
                              static_cast<std::uint32_t>((block - stored.begin) * ks.size() * kPanelRows) * element;
              if (leading) {
                piece.start.push_back(iteration);
                piece.size.push_back(1);
                piece.strides.push_back(1);
              }
              if (step.transpose_weight) {
                piece.start.insert(piece.start.end(), {first, ks.begin});
                piece.size.insert(piece.size.end(), {width, ks.size()});
                piece.strides.insert(piece.strides.end(), {1, kPanelRows});
              } else {
                piece.start.insert(piece.start.end(), {ks.begin, first});
                piece.size.insert(piece.size.end(), {ks.size(), width});
                piece.strides.insert(piece.strides.end(), {kPanelRows, 1});
              }
              binding.pieces.push_back(std::move(piece));
            }
        }
  }

  // A bias: one word per output column of the task's tile; an FP16 bias
  // fills both halves of its word (two pieces), so one 32-bit load feeds a
  // splat of eight FP16 lanes.
  void add_bias(std::vector<package::Binding>& bindings, const Task& task) {
    const MidOp& op = lir_.mid->ops[static_cast<std::size_t>(task.op)];
    const MidValue& output = lir_.mid->values[static_cast<std::size_t>(op.output)];
    const EpilogueOp* bias_op = nullptr;
    for (const EpilogueOp& e : op.epilogue)
      if (e.kind == EpilogueOp::Kind::AddBias) bias_op = &e;
    const Weight& weight = lir_.chain->weights[static_cast<std::size_t>(bias_op->weight)];
    // Where the bias is stored (the task may read a staged copy).
    const Place& stored = lir_.bias_places.at(bias_op->weight);
    const Range columns = output.layout.columns_on(task.tile);
    const bool half = weight.storage.element == ElementType::F16;
    // A joined bias: each graph bias's run of the tile's columns.
    for (std::int64_t column = columns.begin; column < columns.end;) {
      const auto [source, first] = weight_column(weight, column, false);
      const std::int64_t count = std::min(columns.end - column, source->shape.back() - first);
      TILEC_CHECK(count > 0, "bias column {} of '{}' lies past '{}'", column, weight.parameter, source->parameter);
      package::Binding& binding = binding_for(bindings, source->parameter);
      const graph::TensorType& type = binding.type;
      const std::uint32_t offset = static_cast<std::uint32_t>(column - columns.begin) * 4;
      for (int group = 0; group < groups_.groups; ++group)
        for (int iteration = 0; iteration < iterations(stored); ++iteration)
          for (int copy = 0; copy < (half ? 2 : 1); ++copy) {
            Piece piece;
            piece.tile = static_cast<std::uint32_t>(groups_.tile_of(group, task.tile));
            piece.address = address_of(lir_, stored, 0, iteration) + offset + static_cast<std::uint32_t>(copy) * 2;
            for (std::size_t axis = 0; axis + 1 < type.shape.size(); ++axis) {
              piece.start.push_back(axis == 0 && source->per_iteration ? iteration : 0);
              piece.size.push_back(1);
              piece.strides.push_back(1);
            }
            piece.start.push_back(first);
            piece.size.push_back(count);
            piece.strides.push_back(half ? 2 : 1);
            binding.pieces.push_back(std::move(piece));
          }
      column += count;
    }
  }

  // LayerNorm's gamma and beta, interleaved as FP32 pairs: on each tile that
  // normalises rows, those of its output columns, or, where the pairs are
  // gathered, its row part's piece of them.
  void add_layernorm_weights(std::vector<package::Binding>& bindings, int op_index, const Place& place) {
    const MidOp& op = lir_.mid->ops[static_cast<std::size_t>(op_index)];
    const Step& step = lir_.chain->steps[static_cast<std::size_t>(op.step)];
    const Layout& layout = lir_.mid->values[static_cast<std::size_t>(op.output)].layout;
    const int parameters[] = {step.gamma, step.beta};
    for (int which = 0; which < 2; ++which) {
      const Weight& weight = lir_.chain->weights[static_cast<std::size_t>(parameters[which])];
      package::Binding& binding = binding_for(bindings, weight.parameter);
      const graph::TensorType& type = binding.type;
      for (int group = 0; group < groups_.groups; ++group)
        for (int block = 0; block < layout.blocks(); ++block) {
          Range columns = layout.block_cols(block);
          if (gathers_pairs(layout.row_parts(), weight.per_iteration)) {
            const std::vector<Range> pieces = pair_pieces(columns.size(), layout.row_parts());
            const auto row_part = static_cast<std::size_t>(block / layout.col_parts());
            if (row_part >= pieces.size()) continue;
            columns = Range{columns.begin + pieces[row_part].begin, columns.begin + pieces[row_part].end};
          }
          for (int iteration = 0; iteration < iterations(place); ++iteration) {
            Piece piece;
            piece.tile = static_cast<std::uint32_t>(groups_.tile_of(group, layout.block_tiles(block).front()));
            piece.address = address_of(lir_, place, 0, iteration) + static_cast<std::uint32_t>(which) * 4;
            for (std::size_t axis = 0; axis + 1 < type.shape.size(); ++axis) {
              piece.start.push_back(axis == 0 && weight.per_iteration ? iteration : 0);
              piece.size.push_back(1);
              piece.strides.push_back(1);
            }
            piece.start.push_back(columns.begin);
            piece.size.push_back(columns.size());
            piece.strides.push_back(2);
            binding.pieces.push_back(std::move(piece));
          }
        }
    }
  }

  const ImageInputs& in_;
  const Lir& lir_;
  const GroupPlan& groups_;
};

package::RegionKind region_kind(BufferKind kind) {
  switch (kind) {
    case BufferKind::ReceiveSlots:
    case BufferKind::GatheredWeight: return package::RegionKind::ExchangeBuffer;
    case BufferKind::Partial:
    case BufferKind::Statistics:
    case BufferKind::Scratch: return package::RegionKind::Scratch;
    default: return package::RegionKind::Tensor;
  }
}

// One op symbol per task of the tile, over its workers' argument blocks
// (consecutive, in task order), and one per run of sends that serve the
// same op.
void add_op_symbols(const Lir& lir, const TileArguments& arguments, const std::vector<SendSite>& sends,
                    std::uint32_t code_address, int tile, std::vector<package::Symbol>& symbols) {
  for (std::size_t first = 0; first < sends.size();) {
    std::size_t last = first;
    while (last + 1 < sends.size() && sends[last + 1].op == sends[first].op) ++last;
    if (sends[first].op >= 0)
      symbols.push_back(package::Symbol{op_symbol_name(lir, sends[first].op), code_address + sends[first].offset,
                                        sends[last].offset + isa::kBundleBytes - sends[first].offset,
                                        package::SymbolKind::Op});
    first = last + 1;
  }
  const GroupPlan& groups = lir.mid->groups;
  if (tile / groups.group_size >= groups.groups || lir.tasks_of_tile.empty()) return;
  const std::vector<int>& own = lir.tasks_of_tile[static_cast<std::size_t>(tile % groups.group_size)];
  for (std::size_t position = 0; position < own.size(); ++position) {
    const Task& task = lir.tasks[static_cast<std::size_t>(own[position])];
    const std::vector<std::uint32_t>& blocks = arguments.block_addresses[position];
    if (blocks.empty()) continue;
    const auto end = blocks.back() + static_cast<std::uint32_t>(4 * task.worker_arguments.back().size());
    symbols.push_back(package::Symbol{op_symbol_name(lir, task.op), blocks.front(), end - blocks.front(),
                                      package::SymbolKind::Op});
  }
}

// The op or ops a buffer serves: its own, or for the record of a repeat's
// weights every op of the repeat ("layers/*"); "" for the chunk records.
std::string region_op(const Lir& lir, const Buffer& buffer) {
  if (buffer.op >= 0) return op_symbol_name(lir, buffer.op);
  if (buffer.kind == BufferKind::IterationRecord) return lir.chain->repeat->name + "/*";
  return "";
}

package::Schedule schedule(const Lir& lir) {
  const GroupPlan& groups = lir.mid->groups;
  package::Schedule result;
  result.supersteps = static_cast<std::uint32_t>(lir.phases);
  result.chunks = static_cast<std::uint32_t>(groups.chunks);
  result.groups = static_cast<std::uint32_t>(groups.groups);
  result.group_size = static_cast<std::uint32_t>(groups.group_size);
  if (lir.repeat_first_phase >= 0) {
    result.repeat = lir.chain->repeat->name;
    result.repeat_first = lir.repeat_first_phase;
    result.repeat_last = lir.repeat_last_phase;
    result.repeat_count = static_cast<std::uint32_t>(lir.mid->repeat_count);
  }
  return result;
}

}  // namespace

std::string op_symbol_name(const Lir& lir, int index) {
  const MidOp& op = lir.mid->ops[static_cast<std::size_t>(index)];
  if (op.step < 0) return op.name;
  const Step& step = lir.chain->steps[static_cast<std::size_t>(op.step)];
  std::string name = step.name;
  for (const EpilogueOp& epilogue : op.epilogue)
    if (!epilogue.op_name.empty() && epilogue.op_name != step.name) name += "+" + epilogue.op_name;
  const std::optional<RepeatRegion>& repeat = lir.chain->repeat;
  if (repeat && op.step >= repeat->first_step && op.step <= repeat->last_step) name = repeat->name + "/" + name;
  return name;
}

package::Package build_tile_images(const ImageInputs& inputs) {
  const Lir& lir = inputs.lir;
  const MemoryMap& map = inputs.map;
  package::Package result;
  result.target = inputs.machine.name;
  result.exchange_groups = inputs.exchanges.groups;
  result.schedule = schedule(lir);

  std::vector<package::Segment> library_segments;
  std::vector<package::Symbol> library_symbols;
  for (const isa::Segment& segment : inputs.library.segments)
    library_segments.push_back(package::Segment{segment.name, segment.address, segment.bytes, segment.executable});
  for (const isa::LinkedSymbol& symbol : inputs.library.symbols)
    if (symbol.global)
      library_symbols.push_back(package::Symbol{symbol.name, symbol.address, symbol.size,
                                                symbol.kind == isa::SymbolKind::Kernel ? package::SymbolKind::Kernel
                                                                                       : package::SymbolKind::Function});
  std::vector<package::Region> regions{
      {"kernel library", map.library_address, map.library_bytes, package::RegionKind::Code},
      {"supervisor code", map.code_address, map.code_bytes, package::RegionKind::Code},
      {"kernel arguments", map.arguments_address, map.arguments_bytes, package::RegionKind::Arguments}};
  for (const Buffer& buffer : lir.buffers)
    if (buffer.bytes > 0)
      regions.push_back({buffer.name, buffer.address, buffer.bytes, region_kind(buffer.kind),
                         buffer.lifetime.resident ? -1 : buffer.lifetime.first,
                         buffer.lifetime.resident ? -1 : buffer.lifetime.last,
                         region_op(lir, buffer)});
  std::sort(regions.begin(), regions.end(), [](const auto& a, const auto& b) { return a.address < b.address; });

  result.tiles.resize(inputs.machine.tiles);
  std::vector<std::map<const std::vector<std::uint8_t>*, std::shared_ptr<const std::vector<std::uint8_t>>>>
      constant_segments(lir.constants.size());
  for (std::size_t tile = 0; tile < result.tiles.size(); ++tile) {
    package::TileImage& image = result.tiles[tile];
    TileCode& program = inputs.programs[tile];
    image.entry = map.code_address;
    image.segments = library_segments;
    image.segments.push_back(package::Segment{
        ".text", map.code_address, std::make_shared<const std::vector<std::uint8_t>>(std::move(program.code)), true});
    if (!program.arguments.empty())
      image.segments.push_back(package::Segment{
          ".args", map.arguments_address,
          std::make_shared<const std::vector<std::uint8_t>>(std::move(program.arguments)), false});
    // The compiler's constants, shared by the tiles that hold the same.
    if (static_cast<int>(tile) / lir.mid->groups.group_size < lir.mid->groups.groups) {
      const int group_tile = static_cast<int>(tile) % lir.mid->groups.group_size;
      for (std::size_t i = 0; i < lir.constants.size(); ++i) {
        const ConstantData& constant = lir.constants[i];
        const std::vector<std::uint8_t>& bytes = constant.on(group_tile);
        if (bytes.empty()) continue;
        auto& shared = constant_segments[i][&bytes];
        if (!shared) shared = std::make_shared<const std::vector<std::uint8_t>>(bytes);
        image.segments.push_back(package::Segment{lir.buffers[static_cast<std::size_t>(constant.buffer)].name,
                                                  lir.buffers[static_cast<std::size_t>(constant.buffer)].address,
                                                  shared, false});
      }
    }
    image.symbols = library_symbols;
    image.symbols.push_back(package::Symbol{"main", map.code_address, map.code_bytes, package::SymbolKind::Function});
    add_op_symbols(lir, inputs.arguments[tile], program.sends, map.code_address, static_cast<int>(tile), image.symbols);
    image.regions = regions;
    image.peak_bytes = map.peak_bytes(inputs.machine);
  }
  result.bindings = Binder(inputs).bindings();
  // What the loader would reject is the compiler's fault, not the user's.
  try {
    package::validate(result, inputs.machine);
  } catch (const Error& error) {
    throw_failure("build_tile_images", "the package built is invalid: {}", error.what());
  }
  return result;
}

}  // namespace tilec::compiler
