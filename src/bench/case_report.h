// What one case of a sweep (or one `tilec run`) reports, in the schema of the
// reference sweep (../shared/workload.md): the reference's keys, in its
// order, then tilec's own figures. Reports are written as JSON, read back
// (to resume a sweep and to compare two sweeps), and shown as Markdown.
#pragma once

#include "bench/case_key.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec::bench {

// Case statuses. `pass`, `planner-rejected`, `failed` (numbers out of
// tolerance) and `fault` (the simulator stopped the program) are the
// reference's; `error` is anything else that stopped the case (a bad input,
// an internal check), its message in `diagnostic`.
inline constexpr const char* kPass = "pass";
inline constexpr const char* kPlannerRejected = "planner-rejected";
inline constexpr const char* kFailed = "failed";
inline constexpr const char* kFault = "fault";
inline constexpr const char* kError = "error";

struct CaseReport {
  // The reference's keys.
  std::string name;  // "case"
  std::optional<std::int64_t> batch, blocks;
  std::string precision;
  std::uint32_t budget_kib = 0;  // 0 = the whole tile
  std::string status;
  int returncode = 0;
  double wall_seconds = 0;
  // Compile stages that ran, in pipeline order, with their summed wall time.
  std::vector<std::pair<std::string, double>> stages;
  std::optional<std::uint64_t> cycles;
  std::optional<double> maximum_absolute_error;
  std::optional<std::int64_t> weight_bytes, input_bytes;
  std::vector<std::string> diagnostic;
  std::optional<std::uint64_t> renderer_cycles;

  // tilec's own figures.
  std::string target;    // the machine's canonical spelling: "ipu21", "ipu21:N", "ipu1:exchange-bytes=8"
  std::string workload;  // "siglip-mlp", "mlp 8x16x32", "vit 16x32 layers 2", or a graph file
  // A ViT tower's encoder layers and whether its MAP head follows (null
  // for the other workloads and graph files).
  std::optional<std::int64_t> layers;
  std::optional<bool> head;
  std::optional<double> estimated_cycles;         // the built program's
  std::optional<double> search_estimated_cycles;  // the plan search's, for the plan it chose
  std::optional<double> efficiency;  // roofline cycles / cycles
  std::optional<double> device_microseconds;  // cycles at the machine's clock
  // An active tile's cycles in each phase, on average (docs/profile-format.md, "Phases").
  std::optional<double> compute_cycles, exchange_cycles, sync_cycles;
  std::optional<std::uint32_t> peak_tile_bytes;
  std::optional<std::uint64_t> package_bytes;
  std::optional<std::int64_t> out_of_tolerance;  // output elements
  // Of those, NaN on one side only, and an infinity against another value.
  std::optional<std::int64_t> nan_mismatches, infinity_mismatches;
  // The pass rule: |device - reference| <= absolute + relative x |reference|.
  std::optional<double> absolute_tolerance, relative_tolerance;
  // max |device - reference| / |reference| (reference finite, not zero).
  std::optional<double> maximum_relative_error;
  // Against the exact (FP64, unrounded) reference: the device's error, and
  // the rounded reference's, which is what the graph's own precision costs.
  std::optional<double> exact_absolute_error, exact_relative_error;
  std::optional<double> precision_absolute_error, precision_relative_error;
  // Against the plan-order reference (graph::run_reference with the
  // package's summation order): whether every output element has the
  // same bits (a NaN against a NaN counts as equal), and how many do not.
  std::optional<bool> bit_exact;
  std::optional<std::int64_t> differing_elements;
  std::optional<double> compile_seconds, simulate_seconds, reference_seconds, exact_reference_seconds;
  std::optional<double> plan_order_reference_seconds;
  // The process's peak resident memory while the case ran, in bytes: set
  // when the case ran alone in the process (CaseRequest::measure_peak_resident).
  std::optional<std::uint64_t> peak_rss_bytes;
  std::string plan;
  std::string profile;  // the profile page, relative to the report's folder
  // What produced the figures (set once the case has started), and the
  // digest of the device's outputs (when the run completed).
  std::optional<CaseKey> key;
  std::string outputs_digest;

  bool passed() const { return status == kPass; }
};

nlohmann::ordered_json case_json(const CaseReport& report);
// Reads what case_json wrote (or a case of the reference report); `source`
// names the file in errors (BadInput).
CaseReport case_from_json(const nlohmann::ordered_json& json, const std::string& source);

nlohmann::ordered_json report_json(const std::vector<CaseReport>& cases);
// A report file: a JSON array of cases (ours or the reference's).
std::vector<CaseReport> read_report_file(const std::string& path);
// A file of one case object.
CaseReport read_case_file(const std::string& path);
// A case file sealed with the digest of its own text ("digest"), and read
// back: BadInput when it is not a case or was changed after it was written.
std::string sealed_case_text(const CaseReport& report);
CaseReport read_sealed_case_file(const std::string& path);
// Writes through a temporary file and a rename, so a reader (or a killed
// sweep) never sees half a file.
void write_text_atomically(const std::string& path, const std::string& text);

// The sweep as a Markdown table, one row per case, then each case's
// diagnostic when it did not pass.
std::string report_markdown(const std::vector<CaseReport>& cases, const std::string& title);

// `old_cases` and `new_cases` side by side, matched by case name: status,
// cycles, wall time and error, with new/old ratios. A Markdown table.
std::string compare_markdown(const std::vector<CaseReport>& old_cases, const std::vector<CaseReport>& new_cases,
                             const std::string& old_title, const std::string& new_title);

// With cases on several machines (names "POINT@MACHINE"): a table of each
// point's cycles and exchange cycles on each, and their change against the
// first machine (machine_report.cpp); "" otherwise.
std::string machines_markdown(const std::vector<CaseReport>& cases);

}  // namespace tilec::bench
