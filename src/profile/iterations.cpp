// A run's supersteps read by the compiler's schedule: which chunk, which
// superstep of the chunk and which repeat iteration each one is, and the
// repeat's figures per iteration.
#include "profile/summary.h"

#include <algorithm>
#include <map>

namespace tilec::profile {

std::vector<SuperstepPlace> superstep_places(const package::Schedule& schedule, std::size_t count) {
  if (!schedule.known() || count > schedule.run_supersteps()) return {};
  std::vector<SuperstepPlace> places;
  places.reserve(count);
  const bool repeats = !schedule.repeat.empty();
  for (std::uint32_t chunk = 0; places.size() < count; ++chunk)
    for (std::uint32_t step = 0; step < schedule.supersteps && places.size() < count; ++step) {
      const bool first_of_body = repeats && static_cast<std::int32_t>(step) == schedule.repeat_first;
      if (!first_of_body) {
        places.push_back({chunk, step, -1});
        continue;
      }
      // The body's supersteps, once per iteration; the loop resumes after it.
      for (std::uint32_t iteration = 0; iteration < schedule.repeat_count; ++iteration)
        for (std::int32_t body = schedule.repeat_first; body <= schedule.repeat_last && places.size() < count; ++body)
          places.push_back({chunk, static_cast<std::uint32_t>(body), static_cast<std::int32_t>(iteration)});
      step = static_cast<std::uint32_t>(schedule.repeat_last);
    }
  return places;
}

std::vector<IterationTotal> iteration_totals(const ProfileData& profile, std::vector<SuperstepTotal>& supersteps) {
  const std::vector<SuperstepPlace> places = superstep_places(profile.schedule, supersteps.size());
  if (places.empty()) return {};
  for (std::size_t s = 0; s < supersteps.size(); ++s) supersteps[s].place = places[s];
  if (profile.schedule.repeat.empty()) return {};

  std::vector<IterationTotal> iterations(profile.schedule.repeat_count);
  for (std::uint32_t i = 0; i < iterations.size(); ++i) iterations[i].iteration = i;
  for (const SuperstepTotal& step : supersteps) {
    if (step.place->iteration < 0) continue;
    IterationTotal& total = iterations[static_cast<std::size_t>(step.place->iteration)];
    total.supersteps += 1;
    total.cycles += step.cycles;
    total.worker_cycles += step.worker_cycles;
    total.exchange_bytes += step.exchange_bytes;
    total.sync_cycles += step.sync_cycles;
  }
  // Worker-cycles by op: each tile's kernels fall in the superstep of the
  // next sync they reach, as in the superstep totals.
  std::vector<std::map<std::uint32_t, std::uint64_t>> by_op(iterations.size());
  const std::size_t last = supersteps.size() - 1;
  for (const std::vector<sim::ProfileEvent>& events : profile.events.tiles) {
    std::size_t step = 0;
    for (const sim::ProfileEvent& event : events) {
      if (event.kind == sim::ProfileEventKind::SyncWait) step = std::size_t{event.detail} + 1;
      if (event.kind != sim::ProfileEventKind::WorkerKernel) continue;
      const std::int32_t iteration = places[std::min(step, last)].iteration;
      if (iteration >= 0) by_op[static_cast<std::size_t>(iteration)][event.op] += event.end - event.begin;
    }
  }
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    iterations[i].ops.assign(by_op[i].begin(), by_op[i].end());
    std::stable_sort(iterations[i].ops.begin(), iterations[i].ops.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  // A run cut short by a fault ends before its last iterations.
  std::erase_if(iterations, [](const IterationTotal& total) { return total.supersteps == 0; });
  return iterations;
}

}  // namespace tilec::profile
