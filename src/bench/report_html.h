// report.html beside report.md: a sweep's figures as self-contained SVG
// charts (docs/bench.md, "report.html").
#pragma once

#include "bench/case_report.h"

#include <string>
#include <vector>

namespace tilec::bench {

// Cycles and efficiency against the budget (one line per precision, batch
// and machine; `reference`'s cases of the same names dashed beside them),
// each case's compute, exchange and sync cycles, and with several machines
// the cycles and exchange cycles against each.
std::string report_html(const std::vector<CaseReport>& cases, const std::string& title,
                        const std::vector<CaseReport>& reference = {});

}  // namespace tilec::bench
