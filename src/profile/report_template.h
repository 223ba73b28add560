// The HTML page `tilec profile render` fills in: src/profile/report_template.html,
// compiled in at build time (cmake/profile_template.cmake).
#pragma once

#include <string_view>

namespace tilec::profile {

// The template's text. Its one placeholder, kProfileDataPlaceholder, stands
// where the page's data (JSON) goes.
std::string_view report_template();

constexpr std::string_view kProfileDataPlaceholder = "/*TILEC_PROFILE_DATA*/";

}  // namespace tilec::profile
