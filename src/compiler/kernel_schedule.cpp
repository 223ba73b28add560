#include "compiler/kernel_schedule.h"

#include <algorithm>
#include <array>

namespace tilec::compiler {

namespace {

// The fewest bundles from `earlier` to `later` (program order) so that
// `later` sees what the sequential loop shows it; -1: independent.
int latency(const KernelOp& earlier, const KernelOp& later) {
  if ((earlier.writes & later.reads) || (earlier.writes & later.writes)) return 1;
  if (earlier.reads & later.writes) return 0;
  return -1;
}

struct Dependence {
  int from;
  int to;
  int latency;
  int distance;  // iterations between them: 0 or 1
};

std::vector<Dependence> dependences(const std::vector<KernelOp>& ops) {
  std::vector<Dependence> result;
  const int count = static_cast<int>(ops.size());
  for (int i = 0; i < count; ++i)
    for (int j = i + 1; j < count; ++j) {
      if (int l = latency(ops[i], ops[j]); l >= 0) result.push_back({i, j, l, 0});
      // op j of one iteration against op i of the next.
      if (int l = latency(ops[j], ops[i]); l >= 0) result.push_back({j, i, l, 1});
    }
  return result;
}

// Places ops one by one in `order`, each in a bundle its placed neighbours
// allow whose slot is free modulo `interval`, backtracking when an op has no
// such bundle (up to a budget of placements). Forward: earliest bundles
// first; backward: latest first, which keeps loaded values from waiting
// long for their first use.
class Placer {
 public:
  Placer(const std::vector<KernelOp>& ops, const std::vector<Dependence>& deps, std::vector<int> order, int interval,
         int max_stages, bool backward)
      : ops_(ops), order_(std::move(order)), interval_(interval), horizon_(max_stages * interval), backward_(backward),
        origin_(backward ? 2 * max_stages * interval : 0), time_(ops.size(), -1),
        busy_(static_cast<std::size_t>(interval)), neighbours_(ops.size()) {
    for (const Dependence& d : deps) {
      neighbours_[static_cast<std::size_t>(d.from)].push_back(d);
      neighbours_[static_cast<std::size_t>(d.to)].push_back(d);
    }
  }

  // Times from stage 0 on, or nullopt.
  std::optional<std::vector<int>> run() {
    if (!place(0)) return std::nullopt;
    const int first = *std::min_element(time_.begin(), time_.end());
    const int shift = first / interval_ * interval_;  // whole stages keep the slots
    for (int& t : time_) t -= shift;
    return time_;
  }

 private:
  static constexpr int kBudget = 6000;

  bool place(int n) {
    if (n == static_cast<int>(order_.size())) return true;
    const int op = order_[static_cast<std::size_t>(n)];
    // Whole stages: [0, horizon) forward, [origin - horizon, origin) backward.
    int lowest = backward_ ? origin_ - horizon_ : 0, highest = backward_ ? origin_ - 1 : horizon_ - 1;
    for (const Dependence& d : neighbours_[static_cast<std::size_t>(op)]) {
      if (d.to == op && time_[static_cast<std::size_t>(d.from)] >= 0 && d.from != op)
        lowest = std::max(lowest, time_[static_cast<std::size_t>(d.from)] + d.latency - d.distance * interval_);
      if (d.from == op && time_[static_cast<std::size_t>(d.to)] >= 0 && d.to != op)
        highest = std::min(highest, time_[static_cast<std::size_t>(d.to)] - d.latency + d.distance * interval_);
    }
    const std::size_t slot = static_cast<std::size_t>(ops_[static_cast<std::size_t>(op)].slot);
    for (int step = 0; step < interval_; ++step) {
      const int t = backward_ ? highest - step : lowest + step;
      if (t < lowest || t > highest) break;
      auto& busy = busy_[static_cast<std::size_t>(t % interval_)][slot];
      if (busy) continue;
      if (++tries_ > kBudget) return false;
      busy = true;
      time_[static_cast<std::size_t>(op)] = t;
      if (place(n + 1)) return true;
      busy = false;
      time_[static_cast<std::size_t>(op)] = -1;
    }
    return false;
  }

  const std::vector<KernelOp>& ops_;
  std::vector<int> order_;
  int interval_;
  int horizon_;
  bool backward_;
  int origin_;  // backward placement starts far from 0 and shifts back at the end
  std::vector<int> time_;
  std::vector<std::array<bool, 2>> busy_;
  std::vector<std::vector<Dependence>> neighbours_;
  int tries_ = 0;
};

int stages_of(const std::vector<int>& time, int interval) {
  return *std::max_element(time.begin(), time.end()) / interval + 1;
}

std::string bundle(const std::string* main, const std::string* flt) {
  if (main && flt) return "{ " + *main + " ; " + *flt + " }";
  if (main) return *main;
  if (flt) return *flt;
  return "nop";
}

// The bundles of one window of the flat schedule: ops at slot j whose stage
// passes `keep`; windows of the prologue and epilogue drop empty bundles.
template <typename Keep>
void emit_window(const std::vector<KernelOp>& ops, const std::vector<int>& time, int interval, Keep keep,
                 bool drop_empty, std::vector<std::string>& out) {
  for (int j = 0; j < interval; ++j) {
    const std::string* main = nullptr;
    const std::string* flt = nullptr;
    for (std::size_t op = 0; op < ops.size(); ++op) {
      if (time[op] % interval != j || !keep(time[op] / interval)) continue;
      (ops[op].slot == isa::Slot::Main ? main : flt) = &ops[op].text;
    }
    if (drop_empty && !main && !flt) continue;
    out.push_back(bundle(main, flt));
  }
}

}  // namespace

std::optional<ModuloSchedule> modulo_schedule(const std::vector<KernelOp>& ops, int max_stages) {
  if (ops.empty()) return std::nullopt;
  const std::vector<Dependence> deps = dependences(ops);
  int mains = 0, floats = 0;
  for (const KernelOp& op : ops) (op.slot == isa::Slot::Main ? mains : floats) += 1;
  const int sequential = static_cast<int>(ops.size());
  // Placement orders: program order forward, reverse backward, and the same
  // with the busier slot's instructions placed first.
  std::vector<int> program(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) program[i] = static_cast<int>(i);
  std::vector<int> busier_first = program;
  const isa::Slot busier = mains >= floats ? isa::Slot::Main : isa::Slot::Float;
  std::stable_partition(busier_first.begin(), busier_first.end(),
                        [&](int op) { return ops[static_cast<std::size_t>(op)].slot == busier; });
  std::vector<std::pair<std::vector<int>, bool>> orders{{program, false},
                                                        {{program.rbegin(), program.rend()}, true},
                                                        {busier_first, false},
                                                        {{busier_first.rbegin(), busier_first.rend()}, true}};
  for (int interval = std::max({mains, floats, 1}); interval <= sequential; ++interval) {
    std::optional<std::vector<int>> time;
    for (const auto& [order, backward] : orders) {
      std::optional<std::vector<int>> found = Placer(ops, deps, order, interval, max_stages, backward).run();
      if (found && (!time || stages_of(*found, interval) < stages_of(*time, interval))) time = std::move(found);
    }
    if (!time) continue;
    ModuloSchedule schedule;
    schedule.interval = interval;
    schedule.time = *time;
    schedule.stages = stages_of(*time, interval);
    for (int k = 0; k + 1 < schedule.stages; ++k)
      emit_window(ops, schedule.time, interval, [k](int stage) { return stage <= k; }, true, schedule.prologue);
    emit_window(ops, schedule.time, interval, [](int) { return true; }, false, schedule.body);
    for (int k = 1; k < schedule.stages; ++k)
      emit_window(ops, schedule.time, interval, [k](int stage) { return stage >= k; }, true, schedule.epilogue);
    return schedule;
  }
  return std::nullopt;
}

std::vector<std::string> sequential_body(const std::vector<KernelOp>& ops) {
  std::vector<std::string> body;
  for (const KernelOp& op : ops) body.push_back(op.text);
  return body;
}

}  // namespace tilec::compiler
