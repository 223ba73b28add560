// report.html: a sweep's figures as charts, one self-contained page of
// inline SVG (no script, no network): cycles and efficiency against the
// budget, where the cycles go, and the figures against each machine.
#include "bench/report_html.h"

#include "support/number_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace tilec::bench {

namespace {

constexpr const char* kPalette[] = {"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c",
                                    "#0891b2", "#be185d", "#4d7c0f", "#7c3aed", "#a16207"};
constexpr double kWidth = 820, kHeight = 300, kLeft = 78, kRight = 250, kTop = 30, kBottom = 46;

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string short_number(double value) {
  const double a = std::abs(value);
  if (a >= 1e6) return fmt::format("{:.3g}M", value / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", value / 1e3);
  if (a > 0 && a < 1) return fmt::format("{:.2g}", value);
  return fmt::format("{:.0f}", value);
}

struct Series {
  std::string name;
  std::vector<std::optional<double>> values;  // one per x
  bool dashed = false;
};

// A line chart over categorical x, its y axis from 0; `fractions` shows
// values as percentages.
std::string line_chart(const std::string& title, const std::string& y_label, const std::vector<std::string>& xs,
                       const std::vector<Series>& series, bool fractions = false) {
  auto text_of = [&](double v, bool exact) {
    if (fractions) return fmt::format("{:.3g}%", 100 * v);
    return exact ? grouped(static_cast<std::uint64_t>(std::llround(v))) : short_number(v);
  };
  double most = 0;
  for (const Series& s : series)
    for (const std::optional<double>& v : s.values)
      if (v) most = std::max(most, *v);
  if (most <= 0) most = 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x_of = [&](std::size_t i) { return kLeft + (xs.size() == 1 ? plot_w / 2 : plot_w * i / (xs.size() - 1)); };
  auto y_of = [&](double v) { return kTop + plot_h * (1 - v / (most * 1.08)); };
  std::string svg = fmt::format(R"(<figure><figcaption>{}</figcaption><svg class="chart" viewBox="0 0 {} {}" width="{}" height="{}">)",
                                escaped(title), kWidth, kHeight, kWidth, kHeight);
  for (int tick = 0; tick <= 4; ++tick) {
    const double v = most * 1.08 * tick / 4, y = y_of(v);
    svg += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#e2e8f0"/><text x="{}" y="{:.1f}" text-anchor="end" class="tick">{}</text>)",
                       kLeft, kLeft + plot_w, y, y, kLeft - 6, y + 4, text_of(v, false));
  }
  for (std::size_t i = 0; i < xs.size(); ++i)
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle" class="tick">{}</text>)", x_of(i),
                       kHeight - kBottom + 18, escaped(xs[i]));
  svg += fmt::format(R"svg(<text x="14" y="{:.1f}" transform="rotate(-90 14 {:.1f})" text-anchor="middle" class="axis">{}</text>)svg",
                     kTop + plot_h / 2, kTop + plot_h / 2, escaped(y_label));
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const char* colour = kPalette[k % std::size(kPalette)];
    std::string path;
    for (std::size_t i = 0; i < s.values.size(); ++i) {
      if (!s.values[i]) continue;
      path += fmt::format("{}{:.1f} {:.1f}", path.empty() ? "M" : " L", x_of(i), y_of(*s.values[i]));
      svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"><title>{}: {}</title></circle>)", x_of(i),
                         y_of(*s.values[i]), colour, escaped(s.name + ", " + xs[i]), text_of(*s.values[i], true));
    }
    svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2"{}/>)", path, colour,
                       s.dashed ? R"( stroke-dasharray="6 4")" : "");
    const double legend_y = kTop + 14 * static_cast<double>(k);
    svg += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"{}/><text x="{}" y="{:.1f}" class="legend">{}</text>)",
                       kWidth - kRight + 12, kWidth - kRight + 30, legend_y, legend_y, colour,
                       s.dashed ? R"( stroke-dasharray="6 4")" : "", kWidth - kRight + 34, legend_y + 4, escaped(s.name));
  }
  return svg + "</svg></figure>\n";
}

// Stacked horizontal bars: each case's compute, exchange and sync cycles.
std::string phase_bars(const std::vector<CaseReport>& cases) {
  std::vector<const CaseReport*> shown;
  double most = 1;
  for (const CaseReport& report : cases)
    if (report.compute_cycles && report.exchange_cycles && report.sync_cycles) {
      shown.push_back(&report);
      most = std::max(most, static_cast<double>(report.cycles.value_or(0)));
    }
  if (shown.empty()) return "";
  constexpr double kBar = 16, kGap = 6, kName = 250;
  const double height = kTop + (kBar + kGap) * static_cast<double>(shown.size()) + 30;
  const double plot_w = kWidth - kName - 20;
  std::string svg = fmt::format(
      R"(<figure><figcaption>Where the cycles go: an active tile's compute, exchange and sync cycles (the rest idle)</figcaption><svg class="chart" viewBox="0 0 {} {:.0f}" width="{}" height="{:.0f}">)",
      kWidth, height, kWidth, height);
  const std::pair<const char*, const char*> parts[] = {{"compute", "#2563eb"}, {"exchange", "#f59e0b"}, {"sync", "#94a3b8"}};
  for (std::size_t p = 0; p < std::size(parts); ++p)
    svg += fmt::format(R"(<rect x="{}" y="8" width="12" height="12" fill="{}"/><text x="{}" y="18" class="legend">{}</text>)",
                       kName + 100 * static_cast<double>(p), parts[p].second, kName + 100 * static_cast<double>(p) + 16,
                       parts[p].first);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const CaseReport& r = *shown[i];
    const double y = kTop + (kBar + kGap) * static_cast<double>(i);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end" class="tick">{}</text>)", kName - 8, y + 12,
                       escaped(r.name));
    double x = kName;
    const double values[] = {*r.compute_cycles, *r.exchange_cycles, *r.sync_cycles};
    for (std::size_t p = 0; p < std::size(parts); ++p) {
      const double w = plot_w * values[p] / most;
      svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"><title>{} {}: {} cycles</title></rect>)",
                         x, y, std::max(0.0, w), kBar, parts[p].second, escaped(r.name), parts[p].first,
                         grouped(static_cast<std::uint64_t>(std::llround(values[p]))));
      x += w;
    }
  }
  return svg + "</svg></figure>\n";
}

// A case's point without its machine, and the machine's label.
std::pair<std::string, std::string> split_name(const std::string& name) {
  const std::size_t at = name.find('@');
  return at == std::string::npos ? std::pair{name, std::string()} : std::pair{name.substr(0, at), name.substr(at + 1)};
}

std::string budget_label(std::uint32_t kib) { return kib == 0 ? "default" : fmt::format("{}k", kib); }

// Lines over the budgets: one per precision, batch, blocks or layers and
// machine; with `reference`, its figures dashed beside them.
std::string budget_charts(const std::vector<CaseReport>& cases, const std::vector<CaseReport>& reference) {
  std::vector<std::uint32_t> budgets;
  for (const CaseReport& r : cases)
    if (std::find(budgets.begin(), budgets.end(), r.budget_kib) == budgets.end()) budgets.push_back(r.budget_kib);
  std::vector<std::string> xs;
  for (std::uint32_t kib : budgets) xs.push_back(budget_label(kib));
  auto line_name = [](const CaseReport& r) {
    std::string name = fmt::format("{} b{}", r.precision, r.batch.value_or(1));
    if (r.blocks && *r.blocks != 1) name += fmt::format(" n{}", *r.blocks);
    if (r.layers) name += fmt::format(" l{}", *r.layers);
    const std::string machine = split_name(r.name).second;
    return machine.empty() ? name : name + " @" + machine;
  };
  auto gather = [&](const std::vector<CaseReport>& from, bool efficiency, const std::string& suffix, bool dashed,
                    std::vector<Series>& into) {
    std::map<std::string, std::size_t> index;
    for (const CaseReport& r : from) {
      const auto budget = std::find(budgets.begin(), budgets.end(), r.budget_kib);
      if (budget == budgets.end()) continue;
      const std::optional<double> value =
          efficiency ? r.efficiency : r.cycles ? std::optional<double>(static_cast<double>(*r.cycles)) : std::nullopt;
      const std::string name = line_name(r) + suffix;
      if (!index.contains(name)) {
        index[name] = into.size();
        into.push_back(Series{name, std::vector<std::optional<double>>(budgets.size()), dashed});
      }
      into[index[name]].values[static_cast<std::size_t>(budget - budgets.begin())] = value;
    }
  };
  std::vector<Series> cycles, efficiency;
  gather(cases, false, "", false, cycles);
  gather(cases, true, "", false, efficiency);
  if (!reference.empty()) {
    // The reference's cases, matched by point name and budget.
    std::vector<CaseReport> matched;
    for (const CaseReport& theirs : reference)
      for (const CaseReport& ours : cases)
        if (split_name(ours.name).first == theirs.name && ours.budget_kib == theirs.budget_kib) {
          CaseReport copy = theirs;
          copy.name = ours.name;
          copy.precision = ours.precision;
          copy.batch = ours.batch;
          copy.blocks = ours.blocks;
          copy.layers = ours.layers;
          matched.push_back(copy);
          break;
        }
    gather(matched, false, " (reference)", true, cycles);
  }
  return line_chart("Cycles against the per-tile budget", "cycles", xs, cycles) +
         line_chart("Efficiency (roofline cycles / cycles) against the budget", "efficiency", xs, efficiency, true);
}

// With several machines: each point's cycles, and exchange cycles, against
// the machine (the varied field's value when one field varies).
std::string machine_charts(const std::vector<CaseReport>& cases) {
  std::vector<std::string> machines;
  for (const CaseReport& r : cases) {
    const std::string machine = split_name(r.name).second;
    if (!machine.empty() && std::find(machines.begin(), machines.end(), machine) == machines.end())
      machines.push_back(machine);
  }
  if (machines.size() < 2) return "";
  std::string field = machines.front().substr(0, machines.front().find('='));
  for (const std::string& m : machines)
    if (m.find('=') == std::string::npos || m.substr(0, m.find('=')) != field || m.find(',') != std::string::npos)
      field.clear();
  std::vector<std::string> xs;
  for (const std::string& m : machines) xs.push_back(field.empty() ? m : m.substr(field.size() + 1));
  std::vector<Series> cycles, exchange;
  std::map<std::string, std::size_t> index;
  for (const CaseReport& r : cases) {
    const auto [point, machine] = split_name(r.name);
    const auto at = std::find(machines.begin(), machines.end(), machine);
    if (at == machines.end()) continue;
    if (!index.contains(point)) {
      index[point] = cycles.size();
      cycles.push_back(Series{point, std::vector<std::optional<double>>(machines.size())});
      exchange.push_back(Series{point, std::vector<std::optional<double>>(machines.size())});
    }
    const std::size_t x = static_cast<std::size_t>(at - machines.begin());
    if (r.cycles) cycles[index[point]].values[x] = static_cast<double>(*r.cycles);
    exchange[index[point]].values[x] = r.exchange_cycles;
  }
  const std::string against = field.empty() ? "the machine" : field;
  return line_chart("Cycles against " + against, "cycles", xs, cycles) +
         line_chart("An active tile's exchange cycles against " + against, "exchange cycles", xs, exchange);
}

}  // namespace

std::string report_html(const std::vector<CaseReport>& cases, const std::string& title,
                        const std::vector<CaseReport>& reference) {
  std::string page = fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{}</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 24px; color: #0f172a; }}
figure {{ margin: 0 0 28px; }} figcaption {{ font-weight: 600; margin-bottom: 6px; }}
.chart {{ background: #fff; border: 1px solid #e2e8f0; }}
.tick {{ font-size: 11px; fill: #475569; }} .axis {{ font-size: 12px; fill: #0f172a; }}
.legend {{ font-size: 11px; fill: #0f172a; }}
</style></head><body>
<h1>{}</h1>
<p>{} cases{}. Every figure is the simulator's; hover a point for its value.</p>
)",
                                 escaped(title), escaped(title), cases.size(),
                                 reference.empty() ? "" : "; dashed: the reference report's figures");
  page += budget_charts(cases, reference);
  page += phase_bars(cases);
  page += machine_charts(cases);
  return page + "</body></html>\n";
}

}  // namespace tilec::bench
