#include "support/span.h"

#include "support/error.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

namespace tilec {

namespace {

thread_local Timeline* tls_current = nullptr;
thread_local int tls_depth = 0;

std::uint32_t this_thread_number() {
  static std::atomic<std::uint32_t> next{0};
  thread_local std::uint32_t number = next++;
  return number;
}

}  // namespace

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Timeline::Timeline() : origin_(std::chrono::steady_clock::now()) {}

void Timeline::add(SpanRecord record) {
  std::lock_guard lock(mutex_);
  records_.push_back(std::move(record));
}

std::vector<SpanRecord> Timeline::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::vector<SpanRecord> Timeline::top_level() const {
  std::vector<SpanRecord> result;
  for (SpanRecord& record : records())
    if (record.depth == 0) result.push_back(std::move(record));
  return result;
}

double Timeline::seconds_since_origin() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

nlohmann::json Timeline::chrome_trace() const {
  nlohmann::json events = nlohmann::json::array();
  for (const SpanRecord& record : records()) {
    events.push_back({{"name", record.name},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", record.thread},
                      {"ts", record.start_seconds * 1e6},
                      {"dur", record.wall_seconds * 1e6},
                      {"args", {{"busy_us", record.busy_seconds * 1e6}, {"depth", record.depth}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

void Timeline::write_chrome_trace(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw_bad_input(path, "cannot open trace file for writing");
  out << chrome_trace().dump(1) << '\n';
  out.close();  // a full device reports it only when the buffer goes out
  if (!out) throw_failure(path, "cannot write the trace: {}", std::strerror(errno));
}

Timeline& global_timeline() {
  static Timeline timeline;
  return timeline;
}

Timeline& current_timeline() { return tls_current ? *tls_current : global_timeline(); }

TimelineScope::TimelineScope(Timeline& timeline) : previous_(tls_current) {
  tls_current = &timeline;
}

TimelineScope::~TimelineScope() { tls_current = previous_; }

Span::Span(std::string name)
    : timeline_(current_timeline()),
      name_(std::move(name)),
      depth_(tls_depth++),
      start_seconds_(timeline_.seconds_since_origin()),
      start_busy_(thread_cpu_seconds()),
      start_(std::chrono::steady_clock::now()) {
  if (timeline_.on_begin) timeline_.on_begin(name_);
}

Span::~Span() {
  --tls_depth;
  timeline_.add(SpanRecord{name_, depth_, start_seconds_, elapsed_seconds(),
                           thread_cpu_seconds() - start_busy_, this_thread_number()});
}

double Span::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace tilec
