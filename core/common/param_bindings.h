#pragma once
// Typed parameters filled from their schema. A family declares each parameter once, as a ParamSpec bound to
// a field of its typed params struct; the schema (name, range, default, help text) and the struct's values
// both come from that one declaration:
//  - a name cannot be misspelt in one place only (the binding reads the value under the spec's own name);
//  - the struct's defaults are the schema's (its default constructor calls fillDefaults), never written twice;
//  - ranges are checked in one place, ParamSchema: `fill` takes values the schema resolved, and `check`
//    puts a struct built in code (tests, other families) through the same schema, with the same messages.
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/params.h"

namespace tl {

template <class P>
class ParamBindings {
 public:
  // Receives the resolved value; optional parameters that were not given are not passed.
  using Setter = std::function<void(P&, const ParamValue&)>;
  // Reads the value back for `check`; empty for parameters kept in a form that cannot be read back (files).
  using Getter = std::function<ParamValue(const P&)>;

  // A parameter kept in a field of P as it is: int, long long, uint64_t, double, bool or std::string.
  template <class Field>
  ParamBindings& field(ParamSpec spec, Field P::*member) {
    return custom(
        std::move(spec), [member](P& p, const ParamValue& v) { p.*member = convert<Field>(v); },
        [member](const P& p) { return toValue(p.*member); });
  }

  // A Choice kept as an enum through its parser and its name function, e.g. parseMaskMode / maskModeName.
  template <class Field, class Parse, class Name>
  ParamBindings& parsed(ParamSpec spec, Field P::*member, Parse parse, Name name) {
    return custom(
        std::move(spec), [member, parse](P& p, const ParamValue& v) { p.*member = parse(std::get<std::string>(v)); },
        [member, name](const P& p) { return ParamValue(std::string(name(p.*member))); });
  }

  // Anything else: nested fields, file paths, values that combine with others.
  ParamBindings& custom(ParamSpec spec, Setter set, Getter get = {}) {
    specs_.push_back(std::move(spec));
    setters_.push_back(std::move(set));
    getters_.push_back(std::move(get));
    schema_ = ParamSchema(specs_);
    return *this;
  }

  const ParamSchema& schema() const { return schema_; }

  // `resolved` as ParamSchema::resolve returns it (complete and in range). Setters run in declaration order
  // over P's defaults.
  P fill(const ParamSet& resolved) const {
    P p;
    apply(p, resolved);
    return p;
  }

  // Sets every bound field of `p` to its schema default (what P's default constructor calls).
  void fillDefaults(P& p) const { apply(p, schema_.resolve({}, "defaults")); }

  // Puts the readable fields of `p` through the schema: InvalidArgument naming `owner`, the parameter and
  // its valid range, exactly as for a value given on the command line.
  void check(const P& p, const std::string& owner) const {
    ParamSet given;
    for (size_t i = 0; i < specs_.size(); ++i)
      if (getters_[i]) given[specs_[i].name] = getters_[i](p);
    (void)schema_.resolve(given, owner);
  }

 private:
  void apply(P& p, const ParamSet& values) const {
    for (size_t i = 0; i < specs_.size(); ++i) {
      const auto it = values.find(specs_[i].name);
      if (it != values.end()) setters_[i](p, it->second);
    }
  }

  template <class Field>
  static Field convert(const ParamValue& v) {
    if constexpr (std::is_same_v<Field, bool>) {
      return std::get<bool>(v);
    } else if constexpr (std::is_same_v<Field, std::string>) {
      return std::get<std::string>(v);
    } else if constexpr (std::is_integral_v<Field>) {
      return Field(std::get<long long>(v));
    } else {
      static_assert(std::is_floating_point_v<Field>, "bind this field with parsed() or custom()");
      if (const auto* i = std::get_if<long long>(&v)) return Field(*i);
      return Field(std::get<double>(v));
    }
  }

  template <class Field>
  static ParamValue toValue(const Field& f) {
    if constexpr (std::is_same_v<Field, bool> || std::is_same_v<Field, std::string>) {
      return f;
    } else if constexpr (std::is_integral_v<Field>) {
      return static_cast<long long>(f);
    } else {
      return double(f);
    }
  }

  std::vector<ParamSpec> specs_;
  std::vector<Setter> setters_;
  std::vector<Getter> getters_;
  ParamSchema schema_;
};

}  // namespace tl
