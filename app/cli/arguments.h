#pragma once
// The small command-line parser shared by every `tlens` subcommand: each command declares its options once,
// and that declaration drives parsing, validation and the --help text. Usage errors throw
// tl::InvalidArgument, which main() turns into one "tlens: error: ..." line and exit status 2.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tl::cli {

struct OptionSpec {
  std::string name;       // without dashes: "op" for --op
  std::string valueName;  // "SPEC", "DIR"; empty = a flag without a value
  std::string help;       // one line
  bool repeatable = false;
};

struct PositionalSpec {
  std::string name;  // "SESSION.json"
  std::string help;
};

class CommandLine {
 public:
  CommandLine(std::string command, std::string summary, std::vector<OptionSpec> options,
              std::vector<PositionalSpec> positionals = {});

  // Accepts "--name value" and "--name=value"; flags take no value. Throws InvalidArgument for unknown
  // options, missing values, repeated non-repeatable options and a wrong number of positionals.
  // `--help` anywhere sets helpRequested() and skips the other checks.
  void parse(const std::vector<std::string>& args);

  bool helpRequested() const { return help_; }
  bool has(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  std::string required(const std::string& name) const;  // throws InvalidArgument naming the option
  std::vector<std::string> all(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionalValues_; }

  std::string usage() const;  // synopsis plus one line per option
  const std::string& command() const { return command_; }

 private:
  const OptionSpec* find(const std::string& name) const;

  std::string command_, summary_;
  std::vector<OptionSpec> options_;
  std::vector<PositionalSpec> positionalSpecs_;
  std::vector<std::pair<std::string, std::string>> values_;  // in command-line order
  std::vector<std::string> positionalValues_;
  bool help_ = false;
};

// Value parsers for option text; messages name the option ("--n: 'x' is not a positive integer").
int parsePositiveInt(const std::string& option, const std::string& text);
std::vector<int> parsePositiveIntList(const std::string& option, const std::string& text);
// A finite real number ("--lr: 'x' is not a number").
double parseReal(const std::string& option, const std::string& text);
// An integer in 0..2^64−1, e.g. a seed.
uint64_t parseUnsigned(const std::string& option, const std::string& text);

}  // namespace tl::cli
