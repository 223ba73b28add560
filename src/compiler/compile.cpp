// The compiler driver: every stage, in order, each under a span of its name.
#include "compiler/compile.h"

#include "compiler/attempt_order.h"
#include "compiler/chain.h"
#include "compiler/construct_mid.h"
#include "compiler/dump.h"
#include "compiler/exchange_schedule.h"
#include "compiler/gemm_candidates.h"
#include "compiler/group_exchanges.h"
#include "compiler/kernel_library.h"
#include "compiler/kernel_plan.h"
#include "compiler/lowering.h"
#include "compiler/program_estimate.h"
#include "compiler/storage.h"
#include "compiler/summation_order.h"
#include "compiler/tile_code.h"
#include "compiler/tile_images.h"
#include "isa/isa.h"
#include "support/error.h"
#include "support/span.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

namespace tilec::compiler {

namespace {

// The search counts the kernel library at this size: which variants a plan
// needs is known only once it is built.
constexpr std::uint32_t kLibraryEstimate = 2 * 1024;

// Before the exchange schedule exists, the supervisor's code is estimated
// low: the provisional placement (with the exact library and argument
// blocks) only rejects plans that cannot fit even with lean code; the exact
// placement decides the rest. Receives are armed in one of the send orders
// (order_receives), so their code is known before the schedule (the
// leaner counts); a send takes its address, its xwait and itself.
std::uint32_t supervisor_estimate(const Lir& lir) {
  const auto group_size = static_cast<std::size_t>(lir.mid->groups.group_size);
  std::vector<std::uint32_t> bytes(group_size, 0);
  std::vector<std::vector<std::vector<int>>> receives(static_cast<std::size_t>(lir.phases),
                                                      std::vector<std::vector<int>>(group_size));
  for (std::size_t index = 0; index < lir.transfers.size(); ++index) {
    const Transfer& transfer = lir.transfers[index];
    bytes[static_cast<std::size_t>(transfer.source_tile)] += 24;
    for (int tile : transfer.destination_tiles)
      receives[static_cast<std::size_t>(transfer.phase)][static_cast<std::size_t>(tile)].push_back(static_cast<int>(index));
  }
  const auto receive_bundles = [&](std::vector<int> list, SendOrder order) {
    order_receives(lir, list, order);
    ExchangeRegisters registers;
    int bundles = 0;
    for (int index : list) {
      const Transfer& transfer = lir.transfers[static_cast<std::size_t>(index)];
      const ExchangeAction action{ExchangeAction::Kind::Receive, index, static_cast<std::uint32_t>(transfer.source_tile), 0};
      bundles += exchange_action_code(action, transfer, registers).bundles;
    }
    return static_cast<std::uint32_t>(bundles);
  };
  for (auto& phase : receives)
    for (std::size_t tile = 0; tile < group_size; ++tile)
      if (!phase[tile].empty()) {
        std::uint32_t least = UINT32_MAX;
        for (SendOrder order : kSendOrders) least = std::min(least, receive_bundles(phase[tile], order));
        bytes[tile] += isa::kBundleBytes * least;
      }
  for (const Task& task : lir.tasks) bytes[static_cast<std::size_t>(task.tile)] += 64;
  return 256 + 32 * static_cast<std::uint32_t>(lir.phases) + *std::max_element(bytes.begin(), bytes.end());
}
struct Rejection {
  std::uint32_t peak = UINT32_MAX;
  std::string plan;
  std::string contributors;
  std::string why;
};

// The plan's summary with how many of its tiles hold work (a task or an
// exchange): a group may be wider than the work it gets.
std::string plan_text(const PlanChoice& choice, const Chain& chain, const GemmCandidates& candidates, const Lir& lir) {
  std::vector<bool> busy(static_cast<std::size_t>(lir.mid->groups.group_size), false);
  for (const Task& task : lir.tasks) busy[static_cast<std::size_t>(task.tile)] = true;
  for (const Transfer& transfer : lir.transfers) {
    busy[static_cast<std::size_t>(transfer.source_tile)] = true;
    for (int tile : transfer.destination_tiles) busy[static_cast<std::size_t>(tile)] = true;
  }
  const std::int64_t working = std::count(busy.begin(), busy.end(), true) * std::int64_t{lir.mid->groups.groups};
  std::string text = choice.summary(chain, candidates);
  text.insert(std::min(text.find(','), text.size()), fmt::format(" ({} hold work)", working));
  return text;
}

// BadInput when a graph holds FP8 and the machine's AMP does not take it.
void refuse_fp8(const graph::Graph& graph, const MachineModel& machine) {
  for (const graph::Value& value : graph.values)
    if (is_fp8(value.type.storage.element))
      throw_bad_input("--target", "{} has no FP8 AMP (its amp-types are f16/f32), but '{}' is {}; compile with "
                      "--precision fp16, or for a machine with f8",
                      machine.name, value.name, element_type_name(value.type.storage.element));
  for (const graph::Op& op : graph.ops)
    if (op.body) refuse_fp8(*op.body, machine);
}

class Driver {
 public:
  Driver(const graph::Graph& graph, const CompileOptions& options) : graph_(graph), options_(options) {}

  CompileResult run() {
    const MachineModel& machine = options_.machine;
    if (!options_.dump_after.empty() &&
        std::find(kStages.begin(), kStages.end(), options_.dump_after) == kStages.end())
      throw_bad_input("--dump-after", "unknown stage '{}' (the stages are {})", options_.dump_after,
                      fmt::join(kStages, ", "));
    if (!machine.amp_fp8) refuse_fp8(graph_, machine);
    {
      Span span("compile_runtime");
      runtime_ = compile_runtime();
    }
    dump("compile_runtime", [&] { return object_summary(runtime_); });
    {
      Span span("gemm_candidates");
      chain_ = build_chain(graph_);
    }
    // Partial sums as numerics prefer; where no plan fits so, in FP16
    // wherever one pass sums them (half the memory and exchange).
    for (bool relaxed : {false, true}) {
      if (relaxed && options_.fp16_partials_anywhere) break;
      options_.fp16_partials_anywhere |= relaxed;
      if (relaxed) log("no plan fits with partial sums in FP32 where numerics prefer them; trying FP16 partial sums");
      if (std::optional<CompileResult> result = search_and_build(machine)) return std::move(*result);
    }
    const std::uint32_t budget = options_.budget();
    throw NoPlanFits(fmt::format("no plan fits the budget of {} bytes per tile: the smallest peak any plan reached is "
                                 "{} bytes on tile 0 ({}; {}) with {}; budget {} bytes",
                                 budget, best_rejection_.peak, best_rejection_.contributors, best_rejection_.why,
                                 best_rejection_.plan, budget));
  }

 private:
  // The plans of the current options, fastest first, built until one fits
  // the budget; the smallest is measured when none is tried, to say what
  // fills a tile.
  std::optional<CompileResult> search_and_build(const MachineModel& machine) {
    std::vector<int> group_sizes;
    {
      Span span("gemm_candidates");
      group_sizes = candidate_group_sizes(chain_, options_);
      candidates_ = gemm_candidates(chain_, group_sizes, options_);
    }
    dump("gemm_candidates", [&] { return dump_chain(chain_); });
    PlanSearch search;
    {
      Span span("construct_mid");
      search = search_plans(chain_, candidates_, group_sizes, kLibraryEstimate, options_);
    }
    log(fmt::format("search: {} plans considered, {} on the Pareto front", search.plans_considered, search.front.size()));
    AttemptOrder order(chain_, options_.budget(), machine.interleaved.bytes());
    int attempts = 0;
    loop_candidates_.clear();
    std::optional<CompileResult> built;
    const PlanChoice* built_choice = nullptr;
    for (const PlanChoice& choice : search.front) {
      if (order.exhausted()) break;
      if (!order.worth_building(choice, &choice == &search.front.back())) continue;
      ++attempts;
      if ((built = attempt(choice, machine))) {
        built_choice = &choice;
        break;
      }
      order.rejected(choice, last_rejected_peak_, last_rejected_data_);
    }
    if (const std::optional<EstimateShortfall> missed = order.least_missed())
      if (std::optional<CompileResult> faster = search_again(group_sizes, *missed, order, built_choice, built, machine))
        return faster;
    if (built) return built;
    if (!loop_candidates_.empty()) {
      log("no plan fits with every receive armed on its own; arming runs of them in loops");
      options_.loop_receives = true;
      std::optional<CompileResult> result;
      for (const PlanChoice* choice : loop_candidates_)
        if ((result = attempt(*choice, machine))) break;
      options_.loop_receives = false;
      if (result) return result;
    }
    if (attempts == 0 && search.smallest) attempt(*search.smallest, machine);
    return std::nullopt;
  }

  // Faster plans than `built` (or any, without one) were rejected: the
  // search runs again told by how much their estimates fell short, so its
  // states keep labels that may fit in place of faster ones that cannot,
  // and its plans not yet tried that are faster than `built` are built.
  std::optional<CompileResult> search_again(const std::vector<int>& group_sizes, const EstimateShortfall& missed,
                                            AttemptOrder& order,
                                            const PlanChoice* built_choice, std::optional<CompileResult>& built,
                                            const MachineModel& machine) {
    {
      Span span("construct_mid");
      second_search_ = search_plans(chain_, candidates_, group_sizes, kLibraryEstimate, options_,
                                    built_choice ? SecondSearch{missed, built_choice->chunks, built_choice->estimate.cycles}
                                                 : SecondSearch{missed});
    }
    log(fmt::format("search again, each estimate's peak {} bytes and data {} bytes higher: {} plans considered, {} "
                    "on the Pareto front",
                    missed.peak, missed.data, second_search_.plans_considered, second_search_.front.size()));
    int attempts = 0;
    for (const PlanChoice& choice : second_search_.front) {
      if (built_choice && choice.estimate.cycles >= built_choice->estimate.cycles) break;
      if (order.tried(choice) || order.twin_sank(choice)) continue;
      if (attempts++ == AttemptOrder::kCalibratedAttempts) break;
      if (std::optional<CompileResult> faster = attempt(choice, machine)) return faster;
      order.rejected(choice, last_rejected_peak_, last_rejected_data_);
    }
    if (built) {
      log(fmt::format("no faster plan fits; built: {}", built->plan));
      built->log = log_;
    }
    return std::nullopt;
  }

  bool fits_budget(const MemoryMap& map) const {
    return map.fits_classes && map.peak_bytes(options_.machine) <= options_.budget();
  }
  // The bytes a map must shed to fit: over the budget or over a memory class.
  std::int64_t overshoot(const MemoryMap& map) const {
    const MachineModel& machine = options_.machine;
    return std::max({std::int64_t{map.peak_bytes(machine)} - options_.budget(),
                     std::int64_t{map.standard_end} - machine.standard.end,
                     std::int64_t{map.data_end} - machine.interleaved.end});
  }

  ExchangePlan schedule(const Lir& lir, const MachineModel& machine, bool loop_receives) {
    ExchangePlan exchanges;
    {
      Span span("schedule_provisional_exchanges");
      exchanges = schedule_exchanges(lir, machine, loop_receives);
    }
    dump("schedule_provisional_exchanges", [&] { return dump_exchanges(lir, exchanges, 0); });
    return exchanges;
  }

  // Stages size_tile_code and place_storage: the exact memory map.
  MemoryMap place_code_and_storage(Lir& lir, const ExchangePlan& exchanges, const isa::Image& image,
                                   const MachineModel& machine) {
    CodeSizes sizes;
    {
      Span span("size_tile_code");
      sizes = size_tile_code(TileCodeContext{lir, exchanges, image, machine, nullptr});
    }
    // The provisional placement took the argument blocks' size from the tasks.
    TILEC_CHECK(sizes.arguments == argument_bytes(lir), "argument blocks of {} bytes, {} expected", sizes.arguments,
                argument_bytes(lir));
    dump("size_tile_code", [&] {
      return fmt::format("supervisor code {} bytes, argument blocks {} bytes (the largest over tiles)\n", sizes.code,
                         sizes.arguments);
    });
    MemoryMap map;
    {
      Span span("place_storage");
      map = place_storage(lir, image_bytes(image), sizes.code, sizes.arguments, machine);
    }
    dump("place_storage", [&] { return dump_lir(lir); });
    return map;
  }

  // Stages plan_kernels through link_runtime, which change the Lir's tasks;
  // the map comes once the exchanges are scheduled (place_code_and_storage).
  struct KernelBuild {
    KernelLibrary library;
    isa::Image image;
    MemoryMap map;
  };
  struct LirKernelState {
    std::vector<Task> tasks;
    std::vector<std::vector<int>> tasks_of_tile;
    std::vector<Buffer> buffers;
  };
  KernelBuild build_kernels(Lir& lir, const MachineModel& machine, bool split) {
    KernelBuild build;
    {
      Span span("plan_kernels");
      plan_kernels(lir, build.library, split);
    }
    dump("plan_kernels", [&] { return dump_lir(lir); });
    isa::Object variants;
    {
      Span span("compile_kernels");
      variants = compile_kernels(build.library);
    }
    dump("compile_kernels", [&] { return build.library.variant_source(); });
    {
      Span span("link_runtime");
      build.image = link_runtime({&runtime_, &variants}, machine);
    }
    dump("link_runtime", [&] { return image_summary(build.image); });
    return build;
  }

  void log(std::string line) { log_.push_back(std::move(line)); }

  // Keeps the text of `make()` when `stage` is the one to dump (the last
  // attempt's, when the driver tries several plans).
  template <typename Make>
  void dump(std::string_view stage, Make make) {
    if (options_.dump_after == stage) dump_ = make();
  }

  bool fits(const MemoryMap& map, const Lir& lir, const std::string& plan, std::int64_t estimate, const char* when) {
    if (fits_budget(map)) return true;
    const std::uint32_t peak = map.peak_bytes(options_.machine);
    std::string why = map.fits_classes ? fmt::format("{} bytes over the budget", peak - options_.budget()) : map.overflow;
    log(fmt::format("rejected ({}): {}: peak {} bytes (estimated {}): {}", when, plan, peak, estimate, why));
    last_rejected_peak_ = peak;
    last_rejected_data_ = static_cast<std::int64_t>(map.data_end) - options_.machine.interleaved.begin;
    if (peak < best_rejection_.peak) best_rejection_ = Rejection{peak, plan, memory_contributors(lir, map, 4), why};
    return false;
  }

  std::optional<CompileResult> attempt(const PlanChoice& choice, const MachineModel& machine) {
    MidProgram mid;
    {
      Span span("construct_mid");
      mid = construct_mid(chain_, candidates_, choice, options_);
    }
    dump("construct_mid", [&] { return dump_mid(mid); });
    Lir lir;
    {
      Span span("group_exchanges");
      lir = group_exchanges(chain_, mid);
    }
    dump("group_exchanges", [&] { return dump_lir(lir); });
    {
      Span span("merge_copies");
      merge_copies(lir);
    }
    dump("merge_copies", [&] { return dump_lir(lir); });
    {
      Span span("eliminate");
      eliminate(lir);
    }
    dump("eliminate", [&] { return dump_lir(lir); });
    const std::string plan = plan_text(choice, chain_, candidates_, lir);
    // Combines split for their workers (plan_kernels) only add code and
    // argument blocks: a plan is built without the splits first, and with
    // them only once it fits so, keeping them where they fit too.
    const std::vector<Task> unsplit = lir.tasks;
    const bool splits = splits_combines(lir);
    KernelBuild build = build_kernels(lir, machine, false);
    MemoryMap provisional;
    {
      Span span("place_provisional_storage");
      provisional = place_storage(lir, image_bytes(build.image), supervisor_estimate(lir), argument_bytes(lir), machine);
    }
    dump("place_provisional_storage", [&] { return dump_lir(lir); });
    if (!fits(provisional, lir, plan, choice.estimate.peak_bytes, "provisional")) return std::nullopt;
    ExchangePlan exchanges = schedule(lir, machine, options_.loop_receives);
    build.map = place_code_and_storage(lir, exchanges, build.image, machine);
    if (splits && fits_budget(build.map)) {
      LirKernelState without{std::move(lir.tasks), std::move(lir.tasks_of_tile), lir.buffers};
      lir.tasks = unsplit;
      KernelBuild split = build_kernels(lir, machine, true);
      split.map = place_code_and_storage(lir, exchanges, split.image, machine);
      if (fits_budget(split.map)) {
        build = std::move(split);
      } else {
        log(fmt::format("{}: peak {} bytes with combines split for their workers; built without", plan,
                        split.map.peak_bytes(machine)));
        lir.tasks = std::move(without.tasks);
        lir.tasks_of_tile = std::move(without.tasks_of_tile);
        lir.buffers = std::move(without.buffers);
      }
    }
    const KernelLibrary& library = build.library;
    const isa::Image& image = build.image;
    const MemoryMap& map = build.map;
    if (!fits(map, lir, plan, choice.estimate.peak_bytes, "exact")) {
      // Receive runs in loops save code for a bundle of time each: a plan
      // they could bring under is built so once no plan fits without them.
      if (!exchanges.loop_receives && overshoot(map) < map.code_bytes) loop_candidates_.push_back(&choice);
      return std::nullopt;
    }
    ProgramEstimate estimate;
    {
      Span span("estimate_program");
      estimate = estimate_program(lir, exchanges, machine);
    }
    dump("estimate_program", [&] { return dump_program_estimate(estimate); });
    const TileCodeContext context{lir, exchanges, image, machine, &map};
    ExchangeCode exchange;
    {
      Span span("lower_exchanges");
      exchange = lower_exchanges(context);
    }
    dump("lower_exchanges", [&] { return dump_exchange_code(exchange, 0); });
    std::vector<TileArguments> arguments;
    {
      Span span("prepare_tile_code");
      arguments = prepare_tile_code(context);
    }
    dump("prepare_tile_code", [&] { return dump_arguments(arguments[0].bytes, map.arguments_address); });
    std::vector<TileCode> programs;
    {
      Span span("emit_tile_code");
      programs = emit_tile_code(context, exchange, arguments);
    }
    dump("emit_tile_code", [&] { return dump_program(programs[0].code, map.code_address); });
    CompileResult result;
    {
      Span span("build_tile_images");
      result.package = build_tile_images(ImageInputs{graph_, lir, map, image, exchanges, machine, programs, arguments});
    }
    dump("build_tile_images", [&] { return package_summary(result.package); });
    result.package.summation_order = summation_order(chain_, mid);
    result.estimated_cycles = estimate.cycles;
    result.search_estimated_cycles = choice.estimate.cycles;
    result.peak_bytes = map.peak_bytes(machine);
    result.estimated_peak_bytes = choice.estimate.peak_bytes;
    result.plan = plan;
    log(fmt::format("plan: {}", plan));
    log(fmt::format("estimated cycles {:.0f} (the search's {:.0f}), peak {} bytes per tile (estimated {}), {} kernels",
                    result.estimated_cycles, result.search_estimated_cycles, result.peak_bytes,
                    result.estimated_peak_bytes, library.variant_count()));
    result.log = log_;
    result.dump = dump_;
    nlohmann::json info{{"plan", plan},
                        {"estimatedCycles", result.estimated_cycles},
                        {"searchEstimatedCycles", result.search_estimated_cycles},
                        {"peakTileBytes", result.peak_bytes},
                        {"budgetBytes", options_.budget()},
                        {"groups", mid.groups.groups},
                        {"groupSize", mid.groups.group_size},
                        {"chunks", mid.groups.chunks},
                        {"supersteps", lir.phases}};
    result.package.compile_info = info.dump();
    return result;
  }

  const graph::Graph& graph_;
  CompileOptions options_;
  isa::Object runtime_;
  Chain chain_;
  GemmCandidates candidates_;
  PlanSearch second_search_;  // search_again's; loop_candidates_ may point into it
  std::vector<const PlanChoice*> loop_candidates_;  // rejected plans that receive loops might fit
  std::vector<std::string> log_;
  std::string dump_;
  Rejection best_rejection_;
  std::uint32_t last_rejected_peak_ = 0;
  std::int64_t last_rejected_data_ = 0;  // its interleaved data
};

}  // namespace

CompileResult compile(const graph::Graph& graph, const CompileOptions& options) {
  return Driver(graph, options).run();
}

}  // namespace tilec::compiler
