#include "arguments.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.h"

namespace tl::cli {

CommandLine::CommandLine(std::string command, std::string summary, std::vector<OptionSpec> options,
                         std::vector<PositionalSpec> positionals)
    : command_(std::move(command)),
      summary_(std::move(summary)),
      options_(std::move(options)),
      positionalSpecs_(std::move(positionals)) {}

const OptionSpec* CommandLine::find(const std::string& name) const {
  for (const auto& o : options_)
    if (o.name == name) return &o;
  return nullptr;
}

void CommandLine::parse(const std::vector<std::string>& args) {
  if (std::find_if(args.begin(), args.end(), [](const auto& a) { return a == "--help" || a == "-h"; }) !=
      args.end()) {
    help_ = true;
    return;
  }
  const std::string hint = " (see 'tlens " + command_ + " --help')";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("-", 0) != 0 || arg == "-") {
      positionalValues_.push_back(arg);
      continue;
    }
    if (arg.rfind("--", 0) != 0) throw InvalidArgument("unknown option '" + arg + "'" + hint);
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec* spec = find(name);
    if (!spec) throw InvalidArgument("unknown option '--" + name + "' for '" + command_ + "'" + hint);
    std::string value;
    if (spec->valueName.empty()) {
      if (eq != std::string::npos) throw InvalidArgument("option '--" + name + "' takes no value");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw InvalidArgument("option '--" + name + "' needs a value " + spec->valueName);
    }
    if (!spec->repeatable && has(name)) throw InvalidArgument("option '--" + name + "' given twice");
    values_.emplace_back(name, value);
  }
  if (positionalValues_.size() != positionalSpecs_.size()) {
    std::string expected;
    for (const auto& p : positionalSpecs_) expected += " " + p.name;
    throw InvalidArgument("'" + command_ + "' expects " +
                          (expected.empty() ? std::string("no positional arguments") : "arguments:" + expected) +
                          ", got " + std::to_string(positionalValues_.size()) + hint);
  }
}

bool CommandLine::has(const std::string& name) const {
  return std::any_of(values_.begin(), values_.end(), [&](const auto& kv) { return kv.first == name; });
}

std::optional<std::string> CommandLine::get(const std::string& name) const {
  for (const auto& [key, value] : values_)
    if (key == name) return value;
  return std::nullopt;
}

std::string CommandLine::required(const std::string& name) const {
  if (auto v = get(name)) return *v;
  throw InvalidArgument("'" + command_ + "' needs --" + name + " (see 'tlens " + command_ + " --help')");
}

std::vector<std::string> CommandLine::all(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& [key, value] : values_)
    if (key == name) out.push_back(value);
  return out;
}

std::string CommandLine::usage() const {
  std::string text = "usage: tlens " + command_;
  for (const auto& p : positionalSpecs_) text += " " + p.name;
  text += " [options]\n" + summary_ + "\n";
  for (const auto& p : positionalSpecs_) text += "  " + p.name + "\n      " + p.help + "\n";
  text += "options:\n";
  for (const auto& o : options_) {
    text += "  --" + o.name + (o.valueName.empty() ? "" : " " + o.valueName) + (o.repeatable ? " (repeatable)" : "");
    text += "\n      " + o.help + "\n";
  }
  text += "  --help\n      show this help\n";
  return text;
}

int parsePositiveInt(const std::string& option, const std::string& text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 1 || value > std::numeric_limits<int>::max())
    throw InvalidArgument("--" + option + ": '" + text + "' is not a positive integer");
  return int(value);
}

std::vector<int> parsePositiveIntList(const std::string& option, const std::string& text) {
  std::vector<int> values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    values.push_back(parsePositiveInt(option, text.substr(start, comma - start)));
    start = comma + 1;
  }
  return values;
}

double parseReal(const std::string& option, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value))
    throw InvalidArgument("--" + option + ": '" + text + "' is not a number");
  return value;
}

uint64_t parseUnsigned(const std::string& option, const std::string& text) {
  size_t used = 0;
  unsigned long long value = 0;
  // stoull accepts a leading minus sign and wraps it around; only digits are a non-negative integer.
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  try {
    if (digits) value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (!digits || used != text.size()) throw InvalidArgument("--" + option + ": '" + text + "' is not a non-negative integer");
  return uint64_t(value);
}

}  // namespace tl::cli
