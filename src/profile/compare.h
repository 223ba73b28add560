// `tilec profile compare A B`: two runs' figures side by side, by total,
// phase, graph op and kernel, with deltas and ratios, the largest movers
// first (docs/profile-format.md, "Compare").
#pragma once

#include "profile/summary.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tilec::profile {

struct ComparedFigure {
  std::string name;
  double a = 0;
  double b = 0;

  double delta() const { return b - a; }
  // b / a; unset (null in JSON, "-" in text) when a is 0.
  std::optional<double> ratio() const;
};

struct ComparedSection {
  std::string title;  // "totals", "phases", "ops", "kernels"
  std::string unit;   // what the figures count
  std::vector<ComparedFigure> figures;  // totals and phases in fixed order; ops and kernels by |delta|, largest first
};

struct Comparison {
  std::string a_name, b_name;
  std::vector<ComparedSection> sections;
};

// Both profiles are summarised (BadInput when either is not valid).
Comparison compare_profiles(const ProfileData& a, const ProfileData& b);

std::string comparison_text(const Comparison& comparison);
nlohmann::json comparison_json(const Comparison& comparison);
// One self-contained HTML page (no script, no network): a table per section
// with bars of each side.
std::string comparison_html(const Comparison& comparison);

}  // namespace tilec::profile
