#include "profile/compare.h"

#include "support/number_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace tilec::profile {

namespace {

using nlohmann::json;

double as_double(std::uint64_t value) { return static_cast<double>(value); }

ComparedSection phases_section(const ProfileSummary& a, const ProfileSummary& b) {
  ComparedSection section{"phases", "tile-cycles", {}};
  section.figures = {{"compute", as_double(a.phases.compute), as_double(b.phases.compute)},
                     {"exchange", as_double(a.phases.exchange), as_double(b.phases.exchange)},
                     {"sync", as_double(a.phases.sync), as_double(b.phases.sync)},
                     {"idle", as_double(a.phases.idle), as_double(b.phases.idle)}};
  return section;
}

ComparedSection totals_section(const ProfileSummary& a, const ProfileSummary& b) {
  ComparedSection section{"totals", "", {}};
  section.figures = {{"cycles", as_double(a.cycles), as_double(b.cycles)},
                     {"worker-cycles", as_double(a.worker_cycles), as_double(b.worker_cycles)},
                     {"AMP MACs", as_double(a.amp_macs), as_double(b.amp_macs)},
                     {"bytes exchanged", as_double(a.exchange_bytes), as_double(b.exchange_bytes)},
                     {"syncs", as_double(a.syncs), as_double(b.syncs)}};
  return section;
}

// Names present in either run; a name missing from one counts 0 there.
template <typename Total>
ComparedSection named_section(std::string title, const std::vector<Total>& a, const std::vector<Total>& b) {
  std::map<std::string, ComparedFigure> by_name;
  auto shown = [](const std::string& name) { return name.empty() ? std::string("(no op)") : name; };
  for (const Total& total : a) {
    ComparedFigure& figure = by_name[shown(total.name)];
    figure.name = shown(total.name);
    figure.a = as_double(total.worker_cycles);
  }
  for (const Total& total : b) {
    ComparedFigure& figure = by_name[shown(total.name)];
    figure.name = shown(total.name);
    figure.b = as_double(total.worker_cycles);
  }
  ComparedSection section{std::move(title), "worker-cycles", {}};
  for (auto& [name, figure] : by_name) section.figures.push_back(figure);
  std::stable_sort(section.figures.begin(), section.figures.end(), [](const ComparedFigure& x, const ComparedFigure& y) {
    return std::abs(x.delta()) > std::abs(y.delta());
  });
  return section;
}

std::string signed_grouped(double value) {
  const auto magnitude = static_cast<std::uint64_t>(std::llround(std::abs(value)));
  return (value < 0 ? "-" : value > 0 ? "+" : "") + grouped(magnitude);
}

std::string ratio_text(const ComparedFigure& figure) {
  const std::optional<double> ratio = figure.ratio();
  return ratio ? fmt::format("{:.3f}x", *ratio) : "-";
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::optional<double> ComparedFigure::ratio() const {
  if (a == 0) return std::nullopt;
  return b / a;
}

Comparison compare_profiles(const ProfileData& a, const ProfileData& b) {
  const ProfileSummary first = summarize(a), second = summarize(b);
  Comparison comparison;
  comparison.a_name = a.name;
  comparison.b_name = b.name;
  comparison.sections.push_back(totals_section(first, second));
  comparison.sections.push_back(phases_section(first, second));
  comparison.sections.push_back(named_section("ops", first.ops, second.ops));
  comparison.sections.push_back(named_section("kernels", first.kernels, second.kernels));
  return comparison;
}

std::string comparison_text(const Comparison& comparison) {
  std::string text = fmt::format("A {}\nB {}\n", comparison.a_name, comparison.b_name);
  for (const ComparedSection& section : comparison.sections) {
    std::size_t width = section.title.size();
    for (const ComparedFigure& figure : section.figures) width = std::max(width, figure.name.size());
    text += fmt::format("\n{:<{}} {:>16} {:>16} {:>16} {:>9}{}\n", section.title, width, "A", "B", "B - A", "B / A",
                        section.unit.empty() ? "" : "   (" + section.unit + ")");
    for (const ComparedFigure& figure : section.figures)
      text += fmt::format("{:<{}} {:>16} {:>16} {:>16} {:>9}\n", figure.name, width,
                          grouped(static_cast<std::uint64_t>(std::llround(figure.a))),
                          grouped(static_cast<std::uint64_t>(std::llround(figure.b))), signed_grouped(figure.delta()),
                          ratio_text(figure));
    if (section.figures.empty()) text += "(none)\n";
  }
  return text;
}

json comparison_json(const Comparison& comparison) {
  json report = {{"a", comparison.a_name}, {"b", comparison.b_name}};
  for (const ComparedSection& section : comparison.sections) {
    json rows = json::array();
    for (const ComparedFigure& figure : section.figures) {
      const std::optional<double> ratio = figure.ratio();
      rows.push_back({{"name", figure.name},
                      {"a", figure.a},
                      {"b", figure.b},
                      {"delta", figure.delta()},
                      {"ratio", ratio ? json(*ratio) : json(nullptr)}});
    }
    report[section.title] = std::move(rows);
  }
  return report;
}

std::string comparison_html(const Comparison& comparison) {
  std::string html =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tilec profile compare</title>\n"
      "<style>body{font:14px system-ui,sans-serif;margin:24px;color:#0f172a}table{border-collapse:collapse;"
      "margin-bottom:24px}th,td{padding:3px 10px;text-align:right;border-bottom:1px solid #e2e8f0}"
      "th:first-child,td:first-child{text-align:left}.bar{width:240px}.a,.b{height:7px;margin:1px 0}"
      ".a{background:#64748b}.b{background:#2563eb}.up{color:#b91c1c}.down{color:#15803d}</style></head><body>\n";
  html += fmt::format("<h1>Compare</h1><p><span class=\"a\" style=\"display:inline-block;width:14px\"></span> A {}"
                      "<br><span class=\"b\" style=\"display:inline-block;width:14px\"></span> B {}</p>\n",
                      escaped(comparison.a_name), escaped(comparison.b_name));
  for (const ComparedSection& section : comparison.sections) {
    // Totals mix units: each row's bars share its own scale there.
    double section_most = 1;
    for (const ComparedFigure& figure : section.figures) section_most = std::max({section_most, figure.a, figure.b});
    html += fmt::format("<h2>{}{}</h2><table id=\"{}\"><tr><th></th><th>A</th><th>B</th><th>B &minus; A</th>"
                        "<th>B / A</th><th class=\"bar\"></th></tr>\n",
                        escaped(section.title), section.unit.empty() ? "" : " <small>(" + section.unit + ")</small>",
                        section.title);
    for (const ComparedFigure& figure : section.figures) {
      const double most = section.unit.empty() ? std::max({1.0, figure.a, figure.b}) : section_most;
      html += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td class=\"bar\">"
          "<div class=\"a\" style=\"width:{:.1f}%\"></div><div class=\"b\" style=\"width:{:.1f}%\"></div></td></tr>\n",
          escaped(figure.name), grouped(static_cast<std::uint64_t>(std::llround(figure.a))),
          grouped(static_cast<std::uint64_t>(std::llround(figure.b))),
          figure.delta() > 0 ? "up" : figure.delta() < 0 ? "down" : "", signed_grouped(figure.delta()),
          ratio_text(figure), 100 * figure.a / most, 100 * figure.b / most);
    }
    html += "</table>\n";
  }
  html += "</body></html>\n";
  return html;
}

}  // namespace tilec::profile
