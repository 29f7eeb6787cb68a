// Parameter schemas: defaults, type conversion, ranges, choices, text parsing and formatting.
#include "common/params.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

ParamSchema demoSchema() {
  ParamSpec steps;
  steps.name = "steps";
  steps.type = ParamType::Int;
  steps.min = 1;
  steps.max = 100;
  steps.defaultValue = 10LL;
  steps.description = "number of steps";
  ParamSpec rate;
  rate.name = "rate";
  rate.type = ParamType::Real;
  rate.min = 0;
  rate.max = 5;
  rate.minExclusive = true;
  rate.defaultValue = 1.0;
  rate.description = "a positive rate";
  ParamSpec flag;
  flag.name = "flag";
  flag.type = ParamType::Bool;
  flag.defaultValue = false;
  flag.description = "a switch";
  ParamSpec mode;
  mode.name = "mode";
  mode.type = ParamType::Choice;
  mode.choices = {"a", "b"};
  mode.defaultValue = std::string("a");
  mode.description = "a choice";
  ParamSpec file;
  file.name = "file";
  file.type = ParamType::Path;
  file.optional = true;
  file.description = "an optional path";
  return ParamSchema({steps, rate, flag, mode, file});
}

TEST(Params, ResolveFillsDefaultsAndLeavesOptionalsOut) {
  const ParamSet p = demoSchema().resolve({}, "demo");
  EXPECT_EQ(getInt(p, "steps"), 10);
  EXPECT_DOUBLE_EQ(getReal(p, "rate"), 1.0);
  EXPECT_EQ(getBool(p, "flag"), false);
  EXPECT_EQ(getString(p, "mode"), "a");
  EXPECT_FALSE(getOptionalString(p, "file").has_value());
  EXPECT_EQ(p.count("file"), 0u);
}

TEST(Params, ResolveConvertsTypes) {
  const ParamSet p = demoSchema().resolve({{"steps", 3.0}, {"rate", 2LL}}, "demo");
  ASSERT_TRUE(std::holds_alternative<long long>(p.at("steps"))) << "an Int given as 3.0 stays an Int";
  EXPECT_EQ(getInt(p, "steps"), 3);
  ASSERT_TRUE(std::holds_alternative<double>(p.at("rate")));
  EXPECT_DOUBLE_EQ(getReal(p, "rate"), 2.0);
}

TEST(Params, ResolveChecksRangesChoicesAndNames) {
  const auto s = demoSchema();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.resolve({{"steps", 0LL}}, "demo"); }, {"steps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.resolve({{"steps", 101LL}}, "demo"); }, {"steps"}));
  EXPECT_NO_THROW((void)s.resolve({{"steps", 100LL}}, "demo")) << "max is inclusive";
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.resolve({{"rate", 0.0}}, "demo"); }, {"rate"}))
      << "minExclusive";
  EXPECT_NO_THROW((void)s.resolve({{"rate", 5.0}}, "demo"));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.resolve({{"mode", std::string("c")}}, "demo"); }, {"mode"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.resolve({{"speed", 1.0}}, "demo"); }, {"speed", "demo"}));
}

TEST(Params, ParseText) {
  const auto s = demoSchema();
  const ParamSet p = s.parse("steps=7,rate=0.25,flag=true,mode=b,file=/tmp/x.npy", "demo");
  EXPECT_EQ(getInt(p, "steps"), 7);
  EXPECT_DOUBLE_EQ(getReal(p, "rate"), 0.25);
  EXPECT_TRUE(getBool(p, "flag"));
  EXPECT_EQ(getString(p, "mode"), "b");
  EXPECT_EQ(getOptionalString(p, "file").value_or(""), "/tmp/x.npy");
  EXPECT_EQ(s.parse("", "demo"), s.resolve({}, "demo"));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.parse("rate=abc", "demo"); }, {"rate"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.parse("steps=1e400", "demo"); }, {"steps"}));
  // Found by the fuzzer: finite, integral, but beyond long long (the conversion was undefined behaviour).
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.parse("steps=1e52", "demo"); }, {"steps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.parse("rate=nan", "demo"); }, {"rate"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.parse("flag=maybe", "demo"); }, {"flag"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)s.parse("nokeyvalue", "demo"); }));
}

TEST(Params, FormatParseRoundTrip) {
  const auto s = demoSchema();
  const ParamSet p = s.resolve({{"steps", 42LL}, {"rate", 0.1 + 0.2}, {"flag", true}, {"mode", std::string("b")}}, "demo");
  const std::string text = formatParams(p, &s);
  EXPECT_EQ(s.parse(text, "demo"), p) << text;  // doubles survive exactly (0.1 + 0.2 is not 0.3)
  // Schema order.
  EXPECT_LT(text.find("steps="), text.find("rate=")) << text;
  EXPECT_LT(text.find("rate="), text.find("mode=")) << text;
}

TEST(Params, AccessorsThrowOnMissingNames) {
  const ParamSet p = demoSchema().resolve({}, "demo");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)getInt(p, "nothere"); }, {"nothere"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)getReal(p, "nothere"); }, {"nothere"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)getString(p, "nothere"); }, {"nothere"}));
}

TEST(Params, SplitFamily) {
  EXPECT_EQ(splitFamily("sinkhorn:T=3,eps=1"), std::make_pair(std::string("sinkhorn"), std::string("T=3,eps=1")));
  EXPECT_EQ(splitFamily("softmax"), std::make_pair(std::string("softmax"), std::string()));
  EXPECT_EQ(splitFamily("files:q=a:b.npy").first, "files") << "split at the first ':'";
  EXPECT_EQ(splitFamily("files:q=a:b.npy").second, "q=a:b.npy");
}

TEST(Params, DescribeSchemaListsEverything) {
  const std::string help = describeSchema(demoSchema());
  for (const char* needle : {"steps", "rate", "flag", "mode", "file", "number of steps", "a positive rate"})
    EXPECT_NE(help.find(needle), std::string::npos) << needle << "\n" << help;
}

TEST(Params, FindAndSliderRange) {
  const auto s = demoSchema();
  ASSERT_NE(s.find("rate"), nullptr);
  EXPECT_EQ(s.find("rate")->name, "rate");
  EXPECT_EQ(s.find("absent"), nullptr);
  ParamSpec spec;
  spec.min = 0;
  spec.max = 10;
  EXPECT_EQ(spec.sliderMin(), 0);
  EXPECT_EQ(spec.sliderMax(), 10);
  spec.uiMin = 1;
  spec.uiMax = 5;
  EXPECT_EQ(spec.sliderMin(), 1);
  EXPECT_EQ(spec.sliderMax(), 5);
}

}  // namespace
}  // namespace tl
