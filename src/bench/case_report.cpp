#include "bench/case_report.h"

#include "support/number_text.h"
#include "support/duration.h"
#include "support/error.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace tilec::bench {

namespace {

using ordered_json = nlohmann::ordered_json;

template <typename T>
ordered_json optional_json(const std::optional<T>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

// Figures are rounded to what they mean: wall times to milliseconds, errors
// to seven significant digits, so reports diff cleanly.
double round_to(double value, double step) { return std::round(value / step) / (1 / step); }
std::optional<double> rounded_seconds(const std::optional<double>& seconds) {
  if (!seconds) return std::nullopt;
  return round_to(*seconds, 1e-3);
}

class Reader {
 public:
  Reader(const ordered_json& json, std::string source) : json_(json), source_(std::move(source)) {}

  template <typename T>
  std::optional<T> optional(const char* key) const {
    const auto found = json_.find(key);
    if (found == json_.end() || found->is_null()) return std::nullopt;
    try {
      return found->get<T>();
    } catch (const nlohmann::json::exception&) {
      throw_bad_input(source_, "key '{}' has the wrong type", key);
    }
  }
  template <typename T>
  T required(const char* key) const {
    std::optional<T> value = optional<T>(key);
    if (!value) throw_bad_input(source_, "a case has no '{}'", key);
    return *value;
  }
  const std::string& source() const { return source_; }

 private:
  const ordered_json& json_;
  std::string source_;
};

std::string ratio_text(double old_value, double new_value) {
  if (!(old_value > 0)) return "";
  return fmt::format("{:.2f}x", new_value / old_value);
}

std::string error_text(const std::optional<double>& error) {
  return error ? fmt::format("{:.4g}", *error) : "-";
}

std::string cycles_text(const std::optional<std::uint64_t>& cycles) {
  return cycles ? grouped(*cycles) : "-";
}

}  // namespace


ordered_json case_json(const CaseReport& report) {
  ordered_json json;
  json["case"] = report.name;
  json["batch"] = optional_json(report.batch);
  json["blocks"] = optional_json(report.blocks);
  json["precision"] = report.precision;
  json["budget_kib"] = report.budget_kib;
  json["status"] = report.status;
  json["returncode"] = report.returncode;
  json["wall_seconds"] = round_to(report.wall_seconds, 1e-3);
  ordered_json stages = ordered_json::object();
  for (const auto& [stage, seconds] : report.stages) stages[stage] = format_duration(seconds);
  json["stages"] = stages;
  json["cycles"] = optional_json(report.cycles);
  json["maximumAbsoluteError"] = optional_json(report.maximum_absolute_error);
  json["weightBytes"] = optional_json(report.weight_bytes);
  json["inputBytes"] = optional_json(report.input_bytes);
  json["diagnostic"] = report.diagnostic;
  json["renderer_cycles"] = optional_json(report.renderer_cycles);
  json["target"] = report.target;
  json["workload"] = report.workload;
  json["layers"] = optional_json(report.layers);
  json["head"] = optional_json(report.head);
  json["estimatedCycles"] = optional_json(report.estimated_cycles);
  json["searchEstimatedCycles"] = optional_json(report.search_estimated_cycles);
  json["efficiency"] = optional_json(report.efficiency);
  json["deviceMicroseconds"] = optional_json(report.device_microseconds);
  json["computeCycles"] = optional_json(report.compute_cycles);
  json["exchangeCycles"] = optional_json(report.exchange_cycles);
  json["syncCycles"] = optional_json(report.sync_cycles);
  json["peakTileBytes"] = optional_json(report.peak_tile_bytes);
  json["packageBytes"] = optional_json(report.package_bytes);
  json["outOfTolerance"] = optional_json(report.out_of_tolerance);
  json["nanMismatches"] = optional_json(report.nan_mismatches);
  json["infinityMismatches"] = optional_json(report.infinity_mismatches);
  json["absoluteTolerance"] = optional_json(report.absolute_tolerance);
  json["relativeTolerance"] = optional_json(report.relative_tolerance);
  json["maximumRelativeError"] = optional_json(report.maximum_relative_error);
  json["exactAbsoluteError"] = optional_json(report.exact_absolute_error);
  json["exactRelativeError"] = optional_json(report.exact_relative_error);
  json["precisionAbsoluteError"] = optional_json(report.precision_absolute_error);
  json["precisionRelativeError"] = optional_json(report.precision_relative_error);
  json["bitExact"] = optional_json(report.bit_exact);
  json["differingElements"] = optional_json(report.differing_elements);
  json["compileSeconds"] = optional_json(rounded_seconds(report.compile_seconds));
  json["simulateSeconds"] = optional_json(rounded_seconds(report.simulate_seconds));
  json["referenceSeconds"] = optional_json(rounded_seconds(report.reference_seconds));
  json["exactReferenceSeconds"] = optional_json(rounded_seconds(report.exact_reference_seconds));
  json["planOrderReferenceSeconds"] = optional_json(rounded_seconds(report.plan_order_reference_seconds));
  json["peakRssBytes"] = optional_json(report.peak_rss_bytes);
  json["plan"] = report.plan;
  json["profile"] = report.profile;
  json["key"] = report.key ? key_json(*report.key) : ordered_json(nullptr);
  json["outputsDigest"] = report.outputs_digest.empty() ? ordered_json(nullptr) : ordered_json(report.outputs_digest);
  return json;
}

CaseReport case_from_json(const ordered_json& json, const std::string& source) {
  if (!json.is_object()) throw_bad_input(source, "a case is not a JSON object");
  const Reader in(json, source);
  CaseReport report;
  report.name = in.required<std::string>("case");
  const Reader named(json, fmt::format("{}: case '{}'", source, report.name));
  report.batch = named.optional<std::int64_t>("batch");
  report.blocks = named.optional<std::int64_t>("blocks");
  report.precision = named.optional<std::string>("precision").value_or("");
  report.budget_kib = named.optional<std::uint32_t>("budget_kib").value_or(0);
  report.status = named.required<std::string>("status");
  report.returncode = named.optional<int>("returncode").value_or(0);
  report.wall_seconds = named.optional<double>("wall_seconds").value_or(0);
  if (const auto stages = json.find("stages"); stages != json.end() && !stages->is_null()) {
    if (!stages->is_object()) throw_bad_input(named.source(), "'stages' is not an object");
    for (const auto& [stage, text] : stages->items()) {
      const std::optional<double> seconds = text.is_string() ? parse_duration(text.get<std::string>()) : std::nullopt;
      if (!seconds) throw_bad_input(named.source(), "stage '{}' has no duration like \"1.33ms\"", stage);
      report.stages.emplace_back(stage, *seconds);
    }
  }
  report.cycles = named.optional<std::uint64_t>("cycles");
  report.maximum_absolute_error = named.optional<double>("maximumAbsoluteError");
  report.weight_bytes = named.optional<std::int64_t>("weightBytes");
  report.input_bytes = named.optional<std::int64_t>("inputBytes");
  report.diagnostic = named.optional<std::vector<std::string>>("diagnostic").value_or(std::vector<std::string>{});
  report.renderer_cycles = named.optional<std::uint64_t>("renderer_cycles");
  report.target = named.optional<std::string>("target").value_or("");
  report.workload = named.optional<std::string>("workload").value_or("");
  report.layers = named.optional<std::int64_t>("layers");
  report.head = named.optional<bool>("head");
  report.estimated_cycles = named.optional<double>("estimatedCycles");
  report.search_estimated_cycles = named.optional<double>("searchEstimatedCycles");
  report.efficiency = named.optional<double>("efficiency");
  report.device_microseconds = named.optional<double>("deviceMicroseconds");
  report.compute_cycles = named.optional<double>("computeCycles");
  report.exchange_cycles = named.optional<double>("exchangeCycles");
  report.sync_cycles = named.optional<double>("syncCycles");
  report.peak_tile_bytes = named.optional<std::uint32_t>("peakTileBytes");
  report.package_bytes = named.optional<std::uint64_t>("packageBytes");
  report.out_of_tolerance = named.optional<std::int64_t>("outOfTolerance");
  report.nan_mismatches = named.optional<std::int64_t>("nanMismatches");
  report.infinity_mismatches = named.optional<std::int64_t>("infinityMismatches");
  report.absolute_tolerance = named.optional<double>("absoluteTolerance");
  report.relative_tolerance = named.optional<double>("relativeTolerance");
  report.maximum_relative_error = named.optional<double>("maximumRelativeError");
  report.exact_absolute_error = named.optional<double>("exactAbsoluteError");
  report.exact_relative_error = named.optional<double>("exactRelativeError");
  report.precision_absolute_error = named.optional<double>("precisionAbsoluteError");
  report.precision_relative_error = named.optional<double>("precisionRelativeError");
  report.bit_exact = named.optional<bool>("bitExact");
  report.differing_elements = named.optional<std::int64_t>("differingElements");
  report.compile_seconds = named.optional<double>("compileSeconds");
  report.simulate_seconds = named.optional<double>("simulateSeconds");
  report.reference_seconds = named.optional<double>("referenceSeconds");
  report.exact_reference_seconds = named.optional<double>("exactReferenceSeconds");
  report.plan_order_reference_seconds = named.optional<double>("planOrderReferenceSeconds");
  report.peak_rss_bytes = named.optional<std::uint64_t>("peakRssBytes");
  report.plan = named.optional<std::string>("plan").value_or("");
  report.profile = named.optional<std::string>("profile").value_or("");
  if (const auto key = json.find("key"); key != json.end() && !key->is_null()) {
    report.key = key_from_json(*key);
    if (!report.key) throw_bad_input(named.source(), "'key' is not a case key");
  }
  report.outputs_digest = named.optional<std::string>("outputsDigest").value_or("");
  return report;
}

ordered_json report_json(const std::vector<CaseReport>& cases) {
  ordered_json array = ordered_json::array();
  for (const CaseReport& report : cases) array.push_back(case_json(report));
  return array;
}

namespace {

// Ordered, so that stages keep the file's order.
ordered_json read_json_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_bad_input(path, "cannot open");
  std::ostringstream text;
  text << file.rdbuf();
  try {
    return ordered_json::parse(text.str());
  } catch (const ordered_json::parse_error& error) {
    throw_bad_input(path, "not JSON: {}", one_line(error.what()));
  }
}

}  // namespace

CaseReport read_case_file(const std::string& path) { return case_from_json(read_json_file(path), path); }

std::string sealed_case_text(const CaseReport& report) {
  ordered_json json = case_json(report);
  const std::string text = json.dump();
  json["digest"] = bytes_digest(text.data(), text.size());
  return json.dump(2) + "\n";
}

CaseReport read_sealed_case_file(const std::string& path) {
  ordered_json json = read_json_file(path);
  if (!json.is_object() || !json.contains("digest") || !json["digest"].is_string())
    throw_bad_input(path, "has no digest");
  const std::string digest = json["digest"].get<std::string>();
  json.erase("digest");
  const std::string text = json.dump();
  if (bytes_digest(text.data(), text.size()) != digest)
    throw_bad_input(path, "was changed after it was written (its digest does not match)");
  return case_from_json(json, path);
}

std::vector<CaseReport> read_report_file(const std::string& path) {
  const ordered_json json = read_json_file(path);
  if (!json.is_array()) throw_bad_input(path, "a report is a JSON array of cases");
  std::vector<CaseReport> cases;
  for (const ordered_json& entry : json) cases.push_back(case_from_json(entry, path));
  return cases;
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw_failure(path, "cannot open for writing");
    file << text;
    file.flush();
    if (!file) throw_failure(path, "could not write");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) throw_failure(path, "could not replace: {}", error.message());
}

namespace {

// "yes", or "no (N differ)", or "-" when the case did not get that far.
std::string bit_exact_text(const CaseReport& report) {
  if (!report.bit_exact) return "-";
  if (*report.bit_exact) return "yes";
  return fmt::format("no ({} differ)", grouped(static_cast<std::uint64_t>(report.differing_elements.value_or(0))));
}

}  // namespace

std::string report_markdown(const std::vector<CaseReport>& cases, const std::string& title) {
  std::string text = fmt::format("# {}\n\n", title);
  text +=
      "| case | status | cycles | µs | efficiency | max abs error | max rel error | bit exact | exact abs error | "
      "precision abs error | peak tile bytes | compile s | simulate s | wall s | peak RSS |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const CaseReport& report : cases) {
    const std::string name = report.profile.empty() ? report.name : fmt::format("[{}]({})", report.name, report.profile);
    text += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {} |\n", name,
                        report.status, cycles_text(report.cycles),
                        report.device_microseconds ? fmt::format("{:.1f}", *report.device_microseconds) : "-",
                        report.efficiency ? fmt::format("{:.1f}%", *report.efficiency * 100) : "-",
                        error_text(report.maximum_absolute_error), error_text(report.maximum_relative_error),
                        bit_exact_text(report),
                        error_text(report.exact_absolute_error), error_text(report.precision_absolute_error),
                        report.peak_tile_bytes ? grouped(*report.peak_tile_bytes) : "-",
                        report.compile_seconds ? fmt::format("{:.2f}", *report.compile_seconds) : "-",
                        report.simulate_seconds ? fmt::format("{:.2f}", *report.simulate_seconds) : "-",
                        report.wall_seconds,
                        report.peak_rss_bytes ? memory_text(*report.peak_rss_bytes) : "-");
  }
  text += machines_markdown(cases);
  for (const CaseReport& report : cases) {
    if (report.passed() || report.diagnostic.empty()) continue;
    text += fmt::format("\n## {} ({})\n\n```\n", report.name, report.status);
    for (const std::string& line : report.diagnostic) text += line + "\n";
    text += "```\n";
  }
  return text;
}

std::string compare_markdown(const std::vector<CaseReport>& old_cases, const std::vector<CaseReport>& new_cases,
                             const std::string& old_title, const std::string& new_title) {
  std::map<std::string, const CaseReport*> old_by_name;
  for (const CaseReport& report : old_cases) old_by_name.emplace(report.name, &report);
  std::string text = fmt::format("old: {}\nnew: {}\n\n", old_title, new_title);
  text +=
      "| case | old status | new status | old cycles | new cycles | cycles new/old | old wall s | new wall s | "
      "wall new/old | old error | new error |\n"
      "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const CaseReport& now : new_cases) {
    const auto found = old_by_name.find(now.name);
    const CaseReport* before = found == old_by_name.end() ? nullptr : found->second;
    const bool both_cycles = before && before->cycles && now.cycles;
    text += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.1f} | {} | {} | {} |\n", now.name,
                        before ? before->status : "-", now.status, before ? cycles_text(before->cycles) : "-",
                        cycles_text(now.cycles),
                        both_cycles ? ratio_text(static_cast<double>(*before->cycles), static_cast<double>(*now.cycles))
                                    : "",
                        before ? fmt::format("{:.1f}", before->wall_seconds) : "-", now.wall_seconds,
                        before ? ratio_text(before->wall_seconds, now.wall_seconds) : "",
                        before ? error_text(before->maximum_absolute_error) : "-",
                        error_text(now.maximum_absolute_error));
  }
  std::vector<std::string> missing;
  for (const CaseReport& report : old_cases) {
    bool found = false;
    for (const CaseReport& now : new_cases) found = found || now.name == report.name;
    if (!found) missing.push_back(report.name);
  }
  if (!missing.empty()) {
    text += "\nonly in old:";
    for (const std::string& name : missing) text += " " + name;
    text += "\n";
  }
  return text;
}

}  // namespace tilec::bench
