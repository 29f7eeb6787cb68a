// Padding conventions: names, parsing and the schema entry every family declares.
#include "ops/mask_mode.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

TEST(MaskMode, NamesRoundTrip) {
  EXPECT_EQ(parseMaskMode("subsequence"), MaskMode::Subsequence);
  EXPECT_EQ(parseMaskMode("keep-queries"), MaskMode::KeepQueries);
  for (auto mode : {MaskMode::Subsequence, MaskMode::KeepQueries}) EXPECT_EQ(parseMaskMode(maskModeName(mode)), mode);
  EXPECT_STREQ(maskModeName(MaskMode::Subsequence), "subsequence");
  EXPECT_STREQ(maskModeName(MaskMode::KeepQueries), "keep-queries");
}

TEST(MaskMode, UnknownNameIsInvalidArgument) {
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { (void)parseMaskMode("bogus"); }, {"bogus"}));
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { (void)parseMaskMode(""); }));
}

TEST(MaskMode, SchemaEntry) {
  const ParamSpec full = maskModeSpec(true);
  EXPECT_EQ(full.name, "mask_mode");
  EXPECT_EQ(full.type, ParamType::Choice);
  ASSERT_TRUE(std::holds_alternative<std::string>(full.defaultValue));
  EXPECT_EQ(std::get<std::string>(full.defaultValue), "subsequence");
  auto has = [](const ParamSpec& s, const std::string& c) {
    return std::find(s.choices.begin(), s.choices.end(), c) != s.choices.end();
  };
  EXPECT_TRUE(has(full, "subsequence"));
  EXPECT_TRUE(has(full, "keep-queries"));
  const ParamSpec restricted = maskModeSpec(false);
  EXPECT_TRUE(has(restricted, "subsequence"));
  EXPECT_FALSE(has(restricted, "keep-queries"));
}

}  // namespace
}  // namespace tl
