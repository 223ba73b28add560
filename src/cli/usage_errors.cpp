#include "cli/usage_errors.h"

#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <vector>

namespace tilec::cli {

namespace {

// The subcommand the parse reached: the deepest one that was parsed.
const CLI::App& reached_command(const CLI::App& app) {
  const CLI::App* command = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : command->get_subcommands({}))
      if (sub->parsed()) {
        command = sub;
        deeper = true;
        break;
      }
  }
  return *command;
}

std::string command_path(const CLI::App& command) {
  std::string path = command.get_name();
  for (const CLI::App* parent = command.get_parent(); parent; parent = parent->get_parent())
    path = (parent->get_parent() ? parent->get_name() : std::string("tilec")) + " " + path;
  return command.get_parent() ? path : "tilec";
}

std::string subcommand_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::App* sub : command.get_subcommands({})) names.push_back(sub->get_name());
  return fmt::format("{}", fmt::join(names, ", "));
}

bool has_option(const CLI::App& command, const std::string& name) {
  for (const CLI::Option* option : command.get_options())
    if (option->check_lname(name.substr(2))) return true;
  return false;
}

// The text after CLI11's first ": ", or the whole message.
std::string after_colon(const std::string& message) {
  const std::size_t at = message.find(": ");
  return at == std::string::npos ? message : message.substr(at + 2);
}

std::string unexpected_argument(const CLI::App& command, const std::string& argument) {
  const std::string path = command_path(command);
  if (argument.rfind("-", 0) == 0)
    return fmt::format("{}: '{}' has no such flag (see {} --help)", argument, path, path);
  if (!command.get_subcommands({}).empty())
    return fmt::format("{}: '{}' has no such command (commands: {})", argument, path, subcommand_names(command));
  if (has_option(command, "--graph"))
    return fmt::format("{}: '{}' takes a graph file as --graph FILE", argument, path);
  return fmt::format("{}: '{}' takes no more arguments (see {} --help)", argument, path, path);
}

}  // namespace

CLI::Validator integer_in(std::uint64_t min, std::uint64_t max) {
  const std::string range = max == std::numeric_limits<std::uint64_t>::max() ? fmt::format(">= {}", min)
                                                                               : fmt::format("from {} to {}", min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end || value < min || value > max)
          return fmt::format("must be an integer {}, not {}", range, text.empty() ? "nothing" : text);
        return "";
      },
      "INTEGER " + range);
}

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value) || value < 0)
          return fmt::format("must be a number >= 0, not {}", text.empty() ? "nothing" : text);
        return "";
      },
      "NUMBER >= 0");
}

std::string usage_error_text(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App& command = reached_command(app);
  const std::string path = command_path(command);
  const std::string message = error.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&error)) {
    const std::string extras = after_colon(message);
    return unexpected_argument(command, extras.substr(0, extras.find(' ')));
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error)) {
    if (message == "A subcommand is required") {
      const std::vector<std::string> rest = command.remaining();
      if (!rest.empty()) return unexpected_argument(command, rest.front());
      return fmt::format("{}: give a command ({})", path, subcommand_names(command));
    }
    const std::size_t at = message.rfind(" is required");
    if (at != std::string::npos)
      return fmt::format("{}: is required (see {} --help)", message.substr(0, at), path);
  }
  if (dynamic_cast<const CLI::ConversionError*>(&error)) {
    // "Could not convert: --tile = -1"
    const std::string what = after_colon(message);
    const std::size_t at = what.find(" = ");
    if (at != std::string::npos) return fmt::format("{} {}: is not a value it takes", what.substr(0, at), what.substr(at + 3));
  }
  if (dynamic_cast<const CLI::RequiresError*>(&error) || dynamic_cast<const CLI::ExcludesError*>(&error)) {
    // "--disasm requires --tile", "--a excludes --b"
    for (const auto& [verb, words] : {std::pair{" requires ", "needs"}, {" excludes ", "cannot be given with"}}) {
      const std::size_t at = message.find(verb);
      if (at != std::string::npos)
        return fmt::format("{}: {} {}", message.substr(0, at), words, message.substr(at + std::string(verb).size()));
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error)) {
    // "--workload: 1 required NAME missing"
    const std::size_t at = message.find(": ");
    const std::size_t missing = message.rfind(" missing");
    if (at != std::string::npos && missing == message.size() - 8) {
      const std::string rest = message.substr(at + 2, missing - at - 2);
      const std::size_t type = rest.find("required ");
      return fmt::format("{}: needs a value{}", message.substr(0, at),
                         type == std::string::npos ? "" : " (" + rest.substr(type + 9) + ")");
    }
  }
  return one_line(message);
}

}  // namespace tilec::cli
