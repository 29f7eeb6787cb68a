// Typed parameters filled from their schema (common/param_bindings.h): one declaration gives the name, the
// range, the default and the field.
#include "common/param_bindings.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

enum class Colour { Red, Blue };
Colour parseColour(const std::string& t) { return t == "blue" ? Colour::Blue : Colour::Red; }
const char* colourName(Colour c) { return c == Colour::Blue ? "blue" : "red"; }

struct Example {
  int count;
  double weight;
  bool flag;
  Colour colour;
  std::string file;  // optional: empty unless given
};

const ParamBindings<Example>& bindings() {
  static const ParamBindings<Example> b = [] {
    ParamBindings<Example> out;
    out.field(intParam("count", 1, 10, 3, "how many"), &Example::count);
    out.field(positiveParam("weight", 0.5, "how heavy"), &Example::weight);
    out.field(boolParam("flag", true, "on or off"), &Example::flag);
    out.parsed(choiceParam("colour", {"red", "blue"}, "which"), &Example::colour, parseColour, colourName);
    out.custom(pathParam("file", "a file"), [](Example& e, const ParamValue& v) { e.file = std::get<std::string>(v); });
    return out;
  }();
  return b;
}

TEST(ParamBindings, DefaultsComeFromTheSchema) {
  Example e{};
  bindings().fillDefaults(e);
  EXPECT_EQ(e.count, 3);
  EXPECT_EQ(e.weight, 0.5);
  EXPECT_TRUE(e.flag);
  EXPECT_EQ(e.colour, Colour::Red);
  EXPECT_TRUE(e.file.empty()) << "an optional path is absent unless given";
}

TEST(ParamBindings, FillTakesResolvedValuesUnderTheSpecsOwnNames) {
  const ParamSet resolved = bindings().schema().parse("count=7,weight=2,flag=false,colour=blue,file=x.npy", "example");
  const Example e = bindings().fill(resolved);
  EXPECT_EQ(e.count, 7);
  EXPECT_EQ(e.weight, 2.0);
  EXPECT_FALSE(e.flag);
  EXPECT_EQ(e.colour, Colour::Blue);
  EXPECT_EQ(e.file, "x.npy");
}

TEST(ParamBindings, CheckPutsAStructBuiltInCodeThroughTheSchemaRanges) {
  Example e = bindings().fill(bindings().schema().resolve({}, "example"));
  EXPECT_NO_THROW(bindings().check(e, "example"));
  e.count = 11;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { bindings().check(e, "example"); }, {"example", "'count' = 11", "[1, 10]"}));
  e.count = 2;
  e.weight = -1;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { bindings().check(e, "example"); }, {"'weight' = -1"}));
  e.weight = std::nan("");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { bindings().check(e, "example"); }, {"'weight' = nan"}));
}

}  // namespace
}  // namespace tl
