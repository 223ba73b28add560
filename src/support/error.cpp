#include "support/error.h"

namespace tilec {

namespace {
std::string compose(const std::string& where, const std::string& message) {
  return where.empty() ? message : where + ": " + message;
}
}  // namespace

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return text;
}

Error::Error(ErrorKind kind, std::string where, std::string message)
    : std::runtime_error(one_line(compose(where, message))),
      kind_(kind),
      where_(one_line(std::move(where))),
      message_(one_line(std::move(message))) {}

Error Error::within(const std::string& outer) const {
  return Error(kind_, where_.empty() ? outer : outer + ": " + where_, message_);
}

}  // namespace tilec
