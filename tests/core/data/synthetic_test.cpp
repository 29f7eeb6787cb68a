// Seeded synthetic generators called directly (data/synthetic.h).
#include "data/synthetic.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace tl {
namespace {

TEST(SyntheticGaussian, SchemaAndShapes) {
  const ParamSchema schema = gaussianSchema();
  for (const char* name : {"n", "d", "seed"}) EXPECT_NE(schema.find(name), nullptr) << name;
  const ParamSet p = schema.parse("n=21,d=6,seed=9", "gaussian");
  const auto in = generateGaussian(p);
  EXPECT_EQ(in.Q.rows(), 21);
  EXPECT_EQ(in.Q.cols(), 6);
  EXPECT_EQ(in.K.rows(), 21);
  EXPECT_EQ(in.K.cols(), 6);
  ASSERT_TRUE(in.V.has_value());
  EXPECT_EQ(in.V->rows(), 21);
  EXPECT_EQ(in.V->cols(), 6) << "V ~ N(0, I_d)";
  EXPECT_NO_THROW(validateInput(in));
}

TEST(SyntheticGaussian, DeterministicInSeed) {
  const ParamSchema schema = gaussianSchema();
  const auto a = generateGaussian(schema.parse("n=10,d=3,seed=1", "gaussian"));
  const auto b = generateGaussian(schema.parse("n=10,d=3,seed=1", "gaussian"));
  const auto c = generateGaussian(schema.parse("n=10,d=3,seed=2", "gaussian"));
  EXPECT_TRUE(test::matricesIdentical(a.Q, b.Q));
  EXPECT_TRUE(test::matricesIdentical(a.K, b.K));
  EXPECT_TRUE(test::matricesIdentical(*a.V, *b.V));
  EXPECT_GT((a.Q - c.Q).cwiseAbs().maxCoeff(), 1e-6);
}

TEST(SyntheticCloud, ThreeDimensionalWithValuesEqualToKeys) {
  const ParamSchema schema = cloudSchema();
  for (const char* name : {"n", "seed", "shape"}) EXPECT_NE(schema.find(name), nullptr) << name;
  const ParamSpec* shape = schema.find("shape");
  ASSERT_NE(shape, nullptr);
  ASSERT_FALSE(shape->choices.empty());
  for (const auto& s : shape->choices) {
    SCOPED_TRACE(s);
    const auto in = generateCloud(schema.parse("shape=" + s + ",n=50,seed=4", "cloud"));
    EXPECT_EQ(in.Q.rows(), 50);
    EXPECT_EQ(in.Q.cols(), 3);
    EXPECT_EQ(in.K.rows(), 50);
    EXPECT_EQ(in.K.cols(), 3);
    ASSERT_TRUE(in.V.has_value());
    EXPECT_TRUE(test::matricesIdentical(*in.V, in.K)) << "V = K (barycentric projection)";
    EXPECT_GT((in.Q - in.K).cwiseAbs().maxCoeff(), 1e-6) << "two independent samples";
    EXPECT_NO_THROW(validateInput(in));
    const auto again = generateCloud(schema.parse("shape=" + s + ",n=50,seed=4", "cloud"));
    EXPECT_TRUE(test::matricesIdentical(again.Q, in.Q));
  }
}

// Tokens are ordered along the shape, so nearby indices are nearby points: on a noiseless torus the major
// angle in [0, 2π) never decreases with the token index, and on a line the coordinate along it increases.
TEST(SyntheticCloud, TokensAreOrderedAlongTheShape) {
  const ParamSchema schema = cloudSchema();
  const auto torus = generateCloud(schema.parse("shape=torus,n=200,noise=0,seed=1", "cloud"));
  const auto angle = [&](int i) {
    const double a = std::atan2(torus.Q(i, 1), torus.Q(i, 0));
    return a < 0 ? a + 2 * M_PI : a;
  };
  for (int i = 1; i < 200; ++i) EXPECT_LE(angle(i - 1), angle(i) + 1e-12) << "token " << i;
  const auto line = generateCloud(schema.parse("shape=noisy-line,n=100,noise=0,seed=2", "cloud"));
  for (int i = 1; i < 100; ++i) EXPECT_LE(line.K.row(i - 1).sum(), line.K.row(i).sum() + 1e-12);
}

}  // namespace
}  // namespace tl
