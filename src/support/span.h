// Timing spans: `Span span("construct_mid");` measures wall and busy (thread
// CPU) time from construction to destruction. Spans nest; each is recorded
// into the timeline that is current on its thread, which can be written as
// Chrome trace-event JSON (chrome://tracing, Perfetto).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace tilec {

struct SpanRecord {
  std::string name;
  int depth = 0;              // 0 for a span with no enclosing span on its thread
  double start_seconds = 0;   // from the timeline's origin
  double wall_seconds = 0;
  double busy_seconds = 0;    // CPU time of the thread that ran the span
  std::uint32_t thread = 0;   // small per-process thread number
};

class Timeline {
 public:
  Timeline();

  void add(SpanRecord record);
  std::vector<SpanRecord> records() const;
  // Top-level spans (depth 0) in the order they ended, e.g. compiler stages.
  std::vector<SpanRecord> top_level() const;
  double seconds_since_origin() const;

  nlohmann::json chrome_trace() const;
  void write_chrome_trace(const std::string& path) const;

  // Called when a span starts on this timeline (progress reporting).
  std::function<void(const std::string& name)> on_begin;

 private:
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<SpanRecord> records_;
};

// The process-wide timeline, used when no TimelineScope is active.
Timeline& global_timeline();
Timeline& current_timeline();

// Makes `timeline` current on this thread for the scope's lifetime.
class TimelineScope {
 public:
  explicit TimelineScope(Timeline& timeline);
  ~TimelineScope();
  TimelineScope(const TimelineScope&) = delete;
  TimelineScope& operator=(const TimelineScope&) = delete;

 private:
  Timeline* previous_;
};

class Span {
 public:
  explicit Span(std::string name);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  double elapsed_seconds() const;

 private:
  Timeline& timeline_;
  std::string name_;
  int depth_;
  double start_seconds_;
  double start_busy_;
  std::chrono::steady_clock::time_point start_;
};

// CPU time consumed by the calling thread, in seconds.
double thread_cpu_seconds();

}  // namespace tilec
