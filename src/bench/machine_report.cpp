// The machines section of a sweep's report: each point of the grid on every
// machine of --targets and --vary, with what the machine changed.
#include "bench/case_report.h"

#include "support/number_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tilec::bench {

namespace {

// "fp8-b1-n1-default@exchange-bytes=8" -> ("fp8-b1-n1-default", "exchange-bytes=8").
std::pair<std::string, std::string> point_and_machine(const std::string& name) {
  const std::size_t at = name.find('@');
  if (at == std::string::npos) return {name, ""};
  return {name.substr(0, at), name.substr(at + 1)};
}

std::string change_text(const std::optional<double>& now, const std::optional<double>& first) {
  if (!now || !first || *first <= 0) return "-";
  return fmt::format("{:+.1f}%", 100 * (*now - *first) / *first);
}

std::string figure(const std::optional<double>& value) {
  return value ? grouped(static_cast<std::uint64_t>(*value + 0.5)) : "-";
}

}  // namespace

std::string machines_markdown(const std::vector<CaseReport>& cases) {
  std::vector<std::string> points, machines;
  std::map<std::pair<std::string, std::string>, const CaseReport*> at;
  for (const CaseReport& report : cases) {
    const auto [point, machine] = point_and_machine(report.name);
    if (machine.empty()) continue;
    if (std::find(points.begin(), points.end(), point) == points.end()) points.push_back(point);
    if (std::find(machines.begin(), machines.end(), machine) == machines.end()) machines.push_back(machine);
    at[{point, machine}] = &report;
  }
  if (machines.size() < 2) return "";
  std::string text = fmt::format(
      "\n## Machines\n\nEach point on every machine: its cycles, and an active tile's exchange cycles (the "
      "profile's exchange phase); the change of both against {}.\n\n| point |",
      machines.front());
  std::string rule = "| --- |";
  for (const std::string& machine : machines) {
    text += fmt::format(" {} cycles | exchange |", machine);
    rule += " ---: | ---: |";
  }
  for (std::size_t m = 1; m < machines.size(); ++m) {
    text += fmt::format(" {}: cycles | exchange |", machines[m]);
    rule += " ---: | ---: |";
  }
  text += "\n" + rule + "\n";
  for (const std::string& point : points) {
    text += "| " + point + " |";
    auto report = [&](const std::string& machine) -> const CaseReport* {
      const auto found = at.find({point, machine});
      return found == at.end() ? nullptr : found->second;
    };
    auto cycles = [](const CaseReport* r) -> std::optional<double> {
      if (!r || !r->cycles) return std::nullopt;
      return static_cast<double>(*r->cycles);
    };
    auto exchange = [](const CaseReport* r) { return r ? r->exchange_cycles : std::nullopt; };
    for (const std::string& machine : machines)
      text += fmt::format(" {} | {} |", figure(cycles(report(machine))), figure(exchange(report(machine))));
    const CaseReport* first = report(machines.front());
    for (std::size_t m = 1; m < machines.size(); ++m)
      text += fmt::format(" {} | {} |", change_text(cycles(report(machines[m])), cycles(first)),
                          change_text(exchange(report(machines[m])), exchange(first)));
    text += "\n";
  }
  return text;
}

}  // namespace tilec::bench
