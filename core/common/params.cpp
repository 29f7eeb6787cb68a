#include "common/params.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/errors.h"

namespace tl {
namespace {

std::string typeName(ParamType t) {
  switch (t) {
    case ParamType::Int: return "integer";
    case ParamType::Real: return "number";
    case ParamType::Bool: return "true|false";
    case ParamType::Choice: return "choice";
    case ParamType::Path: return "path";
  }
  return "?";
}

std::string joinChoices(const std::vector<std::string>& choices) {
  std::string out;
  for (const auto& c : choices) out += (out.empty() ? "" : "|") + c;
  return out;
}

std::string rangeText(const ParamSpec& s) {
  std::ostringstream os;
  os << (s.minExclusive ? "(" : "[") << formatValue(s.type == ParamType::Int ? ParamValue((long long)s.min) : ParamValue(s.min))
     << ", " << formatValue(s.type == ParamType::Int ? ParamValue((long long)s.max) : ParamValue(s.max)) << "]";
  return os.str();
}

// Parses one "key=value" right-hand side using the spec's type.
ParamValue parseText(const ParamSpec& spec, const std::string& text, const std::string& owner) {
  auto bad = [&](const std::string& expected) {
    return InvalidArgument(owner + ": parameter '" + spec.name + "' = '" + text + "' is not valid; expected " + expected);
  };
  switch (spec.type) {
    case ParamType::Int: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      // 2^53: beyond it doubles skip integers, and far beyond it the conversion to long long is undefined.
      if (text.empty() || *end != '\0' || !std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 0x1p53)
        throw bad("an integer in " + rangeText(spec));
      return (long long)v;
    }
    case ParamType::Real: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v)) throw bad("a finite number in " + rangeText(spec));
      return v;
    }
    case ParamType::Bool:
      if (text == "true" || text == "1" || text == "on" || text == "yes") return true;
      if (text == "false" || text == "0" || text == "off" || text == "no") return false;
      throw bad("true or false");
    case ParamType::Choice:
    case ParamType::Path:
      return text;
  }
  return text;
}

// Converts a value of another variant alternative (e.g. JSON gave 3.0 for an Int) and checks it.
ParamValue checkValue(const ParamSpec& spec, const ParamValue& given, const std::string& owner) {
  const std::string shown = formatValue(given);
  auto bad = [&](const std::string& expected) {
    return InvalidArgument(owner + ": parameter '" + spec.name + "' = " + shown + " is not valid; expected " + expected);
  };
  if (spec.type == ParamType::Int || spec.type == ParamType::Real) {
    double v;
    if (auto i = std::get_if<long long>(&given)) v = double(*i);
    else if (auto d = std::get_if<double>(&given)) v = *d;
    else if (auto s = std::get_if<std::string>(&given)) return checkValue(spec, parseText(spec, *s, owner), owner);
    else throw bad(spec.type == ParamType::Int ? "an integer" : "a number");
    const std::string expected = (spec.type == ParamType::Int ? "an integer in " : "a number in ") + rangeText(spec);
    if (!std::isfinite(v)) throw bad(expected);
    if (spec.type == ParamType::Int && v != std::floor(v)) throw bad(expected);
    if (v < spec.min || v > spec.max || (spec.minExclusive && v <= spec.min)) throw bad(expected);
    if (spec.type == ParamType::Int) return (long long)v;
    return v;
  }
  if (spec.type == ParamType::Bool) {
    if (auto b = std::get_if<bool>(&given)) return *b;
    if (auto s = std::get_if<std::string>(&given)) return parseText(spec, *s, owner);
    throw bad("true or false");
  }
  auto s = std::get_if<std::string>(&given);
  if (!s) throw bad(spec.type == ParamType::Choice ? "one of " + joinChoices(spec.choices) : "a file path");
  if (spec.type == ParamType::Choice && std::find(spec.choices.begin(), spec.choices.end(), *s) == spec.choices.end())
    throw bad("one of " + joinChoices(spec.choices));
  if (spec.type == ParamType::Path && s->empty()) throw bad("a file path");
  return *s;
}

std::string knownNames(const std::vector<ParamSpec>& specs) {
  std::string out;
  for (const auto& s : specs) out += (out.empty() ? "" : ", ") + s.name;
  return out.empty() ? "none" : out;
}

}  // namespace

ParamSpec intParam(const std::string& name, double min, double max, long long defaultValue,
                   const std::string& description, double uiMax) {
  ParamSpec s = realParam(name, min, max, 0, description);
  s.type = ParamType::Int;
  s.defaultValue = defaultValue;
  if (uiMax > 0) {
    s.uiMin = min;
    s.uiMax = uiMax;
  }
  return s;
}

ParamSpec realParam(const std::string& name, double min, double max, double defaultValue,
                    const std::string& description) {
  ParamSpec s;
  s.name = name;
  s.type = ParamType::Real;
  s.min = min;
  s.max = max;
  s.defaultValue = defaultValue;
  s.description = description;
  return s;
}

ParamSpec positiveParam(const std::string& name, double defaultValue, const std::string& description, double uiMin,
                        double uiMax) {
  ParamSpec s = realParam(name, 0, 1e6, defaultValue, description);
  s.minExclusive = true;
  s.logScale = true;
  s.uiMin = uiMin;
  s.uiMax = uiMax;
  return s;
}

ParamSpec choiceParam(const std::string& name, std::vector<std::string> choices, const std::string& description) {
  ParamSpec s;
  s.name = name;
  s.type = ParamType::Choice;
  s.defaultValue = choices.front();
  s.choices = std::move(choices);
  s.description = description;
  return s;
}

ParamSpec boolParam(const std::string& name, bool defaultValue, const std::string& description) {
  ParamSpec s;
  s.name = name;
  s.type = ParamType::Bool;
  s.defaultValue = defaultValue;
  s.description = description;
  return s;
}

ParamSpec pathParam(const std::string& name, const std::string& description) {
  ParamSpec s;
  s.name = name;
  s.type = ParamType::Path;
  s.optional = true;
  s.description = description;
  return s;
}

const ParamSpec* ParamSchema::find(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

ParamSet ParamSchema::resolve(const ParamSet& given, const std::string& owner) const {
  for (const auto& [name, value] : given) {
    if (!find(name))
      throw InvalidArgument(owner + " has no parameter '" + name + "' (its parameters: " + knownNames(specs_) + ")");
  }
  ParamSet out;
  for (const auto& spec : specs_) {
    auto it = given.find(spec.name);
    if (it != given.end()) out[spec.name] = checkValue(spec, it->second, owner);
    else if (!spec.optional) out[spec.name] = spec.defaultValue;
  }
  return out;
}

ParamSet ParamSchema::parse(const std::string& text, const std::string& owner) const {
  ParamSet given;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InvalidArgument(owner + ": '" + item + "' is not of the form key=value");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    const ParamSpec* spec = find(key);
    if (!spec) throw InvalidArgument(owner + " has no parameter '" + key + "' (its parameters: " + knownNames(specs_) + ")");
    if (given.count(key)) throw InvalidArgument(owner + ": parameter '" + key + "' is given twice");
    given[key] = parseText(*spec, value, owner);
  }
  return resolve(given, owner);
}

namespace {
template <class V>
const V& getAs(const ParamSet& params, const std::string& name, const char* what) {
  auto it = params.find(name);
  if (it == params.end()) throw InvalidArgument("missing parameter '" + name + "'");
  if (auto v = std::get_if<V>(&it->second)) return *v;
  throw InvalidArgument("parameter '" + name + "' is not " + what);
}
}  // namespace

long long getInt(const ParamSet& p, const std::string& name) { return getAs<long long>(p, name, "an integer"); }
double getReal(const ParamSet& p, const std::string& name) {
  auto it = p.find(name);
  if (it != p.end())
    if (auto i = std::get_if<long long>(&it->second)) return double(*i);
  return getAs<double>(p, name, "a number");
}
bool getBool(const ParamSet& p, const std::string& name) { return getAs<bool>(p, name, "true or false"); }
std::string getString(const ParamSet& p, const std::string& name) { return getAs<std::string>(p, name, "text"); }
std::optional<std::string> getOptionalString(const ParamSet& p, const std::string& name) {
  if (!p.count(name)) return std::nullopt;
  return getString(p, name);
}

std::string formatValue(const ParamValue& value) {
  if (auto i = std::get_if<long long>(&value)) return std::to_string(*i);
  if (auto b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (auto s = std::get_if<std::string>(&value)) return *s;
  // Shortest text that reads back to the same double.
  const double d = std::get<double>(value);
  for (int precision = 6; precision <= 17; ++precision) {
    std::ostringstream os;
    os.precision(precision);
    os << d;
    if (std::strtod(os.str().c_str(), nullptr) == d) return os.str();
  }
  return std::to_string(d);
}

std::string formatParams(const ParamSet& params, const ParamSchema* schema) {
  std::string out;
  auto append = [&](const std::string& k, const ParamValue& v) { out += (out.empty() ? "" : ",") + k + "=" + formatValue(v); };
  if (schema) {
    for (const auto& spec : schema->specs())
      if (auto it = params.find(spec.name); it != params.end()) append(spec.name, it->second);
    for (const auto& [k, v] : params)
      if (!schema->find(k)) append(k, v);
  } else {
    for (const auto& [k, v] : params) append(k, v);
  }
  return out;
}

std::pair<std::string, std::string> splitFamily(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {text, ""};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

std::string describeSchema(const ParamSchema& schema, const std::string& indent) {
  std::ostringstream os;
  for (const auto& s : schema.specs()) {
    os << indent << s.name << " (" << typeName(s.type);
    if (s.type == ParamType::Int || s.type == ParamType::Real) os << " in " << rangeText(s);
    if (s.type == ParamType::Choice) os << ": " << joinChoices(s.choices);
    if (s.logScale) os << ", log scale";
    os << (s.optional ? ", optional" : ", default " + formatValue(s.defaultValue)) << ")  " << s.description << "\n";
  }
  return os.str();
}

}  // namespace tl
