#pragma once
// Parameters are declared once, as a schema, and that schema drives the CLI's help and parsing, the GUI's
// controls and the Session JSON. Operators and synthetic sources both use it, so a new family plugs in
// without touching the front ends. Names follow the glossary, docs/conventions.md#glossary.
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tl {

enum class ParamType { Int, Real, Bool, Choice, Path };

using ParamValue = std::variant<long long, double, bool, std::string>;

struct ParamSpec {
  std::string name;         // glossary name, e.g. "T", "eps", "mask_mode"
  ParamType type = ParamType::Real;
  double min = 0;           // valid range (inclusive unless minExclusive); ignored for Bool/Choice/Path
  double max = 0;
  bool minExclusive = false;
  ParamValue defaultValue;
  bool logScale = false;    // the GUI uses a log slider
  double uiMin = 0, uiMax = 0;  // slider range when narrower than the valid range (0,0 = same as min/max)
  std::vector<std::string> choices;  // for Choice
  std::string description;  // one line, shown as CLI help and GUI tooltip
  bool optional = false;    // no default: absent unless given (e.g. a file path)

  double sliderMin() const { return (uiMin == 0 && uiMax == 0) ? min : uiMin; }
  double sliderMax() const { return (uiMin == 0 && uiMax == 0) ? max : uiMax; }
};

using ParamSet = std::map<std::string, ParamValue>;

// Builders for schema entries, so every family declares its parameters in one line each.
// intParam: the slider covers [min, uiMax] when uiMax > 0 (e.g. T: valid up to 1e5, slider 1..500).
ParamSpec intParam(const std::string& name, double min, double max, long long defaultValue,
                   const std::string& description, double uiMax = 0);
ParamSpec realParam(const std::string& name, double min, double max, double defaultValue,
                    const std::string& description);
// A temperature-like parameter: strictly positive (up to 1e6), on a log slider over [uiMin, uiMax].
ParamSpec positiveParam(const std::string& name, double defaultValue, const std::string& description,
                        double uiMin = 1e-2, double uiMax = 1e2);
// The first choice is the default.
ParamSpec choiceParam(const std::string& name, std::vector<std::string> choices, const std::string& description);
ParamSpec boolParam(const std::string& name, bool defaultValue, const std::string& description);
// Optional file path: absent unless given.
ParamSpec pathParam(const std::string& name, const std::string& description);

class ParamSchema {
 public:
  ParamSchema() = default;
  explicit ParamSchema(std::vector<ParamSpec> specs) : specs_(std::move(specs)) {}

  const std::vector<ParamSpec>& specs() const { return specs_; }
  const ParamSpec* find(const std::string& name) const;

  // Fills defaults, converts types (an Int given as 3.0 stays an Int), checks ranges and choices, and
  // rejects names the schema does not have. `owner` names the family in messages ("sinkhorn").
  ParamSet resolve(const ParamSet& given, const std::string& owner) const;

  // Parses "key=value,key=value" text against the schema (types come from the specs), then resolves.
  ParamSet parse(const std::string& text, const std::string& owner) const;

 private:
  std::vector<ParamSpec> specs_;
};

// Typed accessors for resolved sets; they throw InvalidArgument when the name is missing.
long long getInt(const ParamSet& params, const std::string& name);
double getReal(const ParamSet& params, const std::string& name);
bool getBool(const ParamSet& params, const std::string& name);
std::string getString(const ParamSet& params, const std::string& name);
std::optional<std::string> getOptionalString(const ParamSet& params, const std::string& name);

std::string formatValue(const ParamValue& value);
// "T=10,eps=0.5" in schema order (parameters not in the schema are appended alphabetically).
std::string formatParams(const ParamSet& params, const ParamSchema* schema = nullptr);
// "family:key=value,..." split at the first ':'.
std::pair<std::string, std::string> splitFamily(const std::string& text);
// Help text block listing every parameter: name, type, range, default, description.
std::string describeSchema(const ParamSchema& schema, const std::string& indent = "  ");

}  // namespace tl
