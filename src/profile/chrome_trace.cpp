// Chrome trace-event JSON of a profile: one process per tile (pid = tile + 1,
// named "tile N"), one thread per context (tid = context + 1: workers 1-6,
// the supervisor 7), a complete ("X") event per kernel, send and sync wait,
// an instant ("i") event per halt. Times are microseconds at the profile's
// clock; every event also carries its cycles in `args`.
#include "profile/profile.h"
#include "profile/profile_codec.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iterator>

namespace tilec::profile {

namespace {

std::string context_name(unsigned context) {
  return context == sim::kSupervisorContext ? "supervisor" : fmt::format("worker {}", context);
}

}  // namespace

std::string chrome_trace(const ProfileData& profile) {
  validate_profile(profile);
  std::vector<std::string> quoted_labels;
  for (const std::string& label : profile.events.labels) quoted_labels.push_back(nlohmann::json(label).dump());
  const double microseconds_per_cycle = 1.0 / (profile.clock_ghz * 1e3);

  std::string out;
  auto write = std::back_inserter(out);
  fmt::format_to(write, R"({{"displayTimeUnit":"ns","otherData":{{"profile":{},"target":{},"clock_ghz":{},"cycles":{}}},)",
                 nlohmann::json(profile.name).dump(), nlohmann::json(profile.target).dump(), profile.clock_ghz,
                 profile.cycles);
  out += "\"traceEvents\":[";
  bool first = true;
  auto separate = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (std::uint32_t tile = 0; tile < profile.events.tiles.size(); ++tile) {
    const std::vector<sim::ProfileEvent>& events = profile.events.tiles[tile];
    if (events.empty()) continue;
    const std::uint32_t pid = tile + 1;
    separate();
    fmt::format_to(write, R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":"tile {}"}}}},)", pid, tile);
    fmt::format_to(write, R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})", pid, tile);
    bool used[sim::kSupervisorContext + 1] = {};
    for (const sim::ProfileEvent& event : events) used[event.context] = true;
    for (unsigned context = 0; context <= sim::kSupervisorContext; ++context)
      if (used[context])
        fmt::format_to(write,
                       ",\n"
                       R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"{}"}}}},)"
                       R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
                       pid, context + 1, context_name(context), pid, context + 1,
                       context == sim::kSupervisorContext ? 0 : context + 1);
    for (const sim::ProfileEvent& event : events) {
      separate();
      const double ts = static_cast<double>(event.begin) * microseconds_per_cycle;
      if (event.kind == sim::ProfileEventKind::Halt) {
        fmt::format_to(write, R"({{"ph":"i","s":"t","pid":{},"tid":{},"name":"halt","cat":"halt","ts":{},"args":{{"cycle":{}}}}})",
                       pid, event.context + 1, ts, event.begin);
        continue;
      }
      fmt::format_to(write, R"({{"ph":"X","pid":{},"tid":{},"name":{},"cat":"{}","ts":{},"dur":{},"args":{{"begin_cycle":{},"end_cycle":{})",
                     pid, event.context + 1, quoted_labels[event.label], event_kind_name(event.kind), ts,
                     static_cast<double>(event.end - event.begin) * microseconds_per_cycle, event.begin, event.end);
      switch (event.kind) {
        case sim::ProfileEventKind::WorkerKernel:
          fmt::format_to(write, R"(,"entry":"{:#x}")", event.detail);
          if (event.op != sim::kNoOpLabel) fmt::format_to(write, R"(,"op":{})", quoted_labels[event.op]);
          break;
        case sim::ProfileEventKind::SupervisorExchange: fmt::format_to(write, R"(,"bytes":{})", event.detail); break;
        case sim::ProfileEventKind::SyncWait: fmt::format_to(write, R"(,"sync":{})", event.detail); break;
        case sim::ProfileEventKind::Halt: break;
      }
      out += "}}";
    }
  }
  out += "]}\n";
  return out;
}

}  // namespace tilec::profile
