#include "numerics/element_type.h"

#include <array>
#include <utility>

namespace tilec {

namespace {
constexpr std::array<std::pair<ElementType, std::string_view>, 6> kNames{{
    {ElementType::F32, "f32"},
    {ElementType::F16, "f16"},
    {ElementType::F143, "f143"},
    {ElementType::F152, "f152"},
    {ElementType::E4M3, "e4m3"},
    {ElementType::E5M2, "e5m2"},
}};
}  // namespace

std::string_view element_type_name(ElementType type) {
  for (const auto& [candidate, name] : kNames)
    if (candidate == type) return name;
  return "?";
}

std::optional<ElementType> parse_element_type(std::string_view name) {
  for (const auto& [type, candidate] : kNames)
    if (candidate == name) return type;
  return std::nullopt;
}

}  // namespace tilec
