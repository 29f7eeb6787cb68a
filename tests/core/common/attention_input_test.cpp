// validateInput: every operator's first line of defence against bad shapes and NaN/Inf.
#include "common/attention_input.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

AttentionInput<double> good(int n = 6, int d = 4) {
  AttentionInput<double> in;
  in.Q = test::gaussian(n, d, 1);
  in.K = test::gaussian(n, d, 2);
  in.V = test::gaussian(n, 3, 3);
  in.mask = Mask::Constant(n, true);
  return in;
}

TEST(AttentionInput, AcceptsConsistentInput) {
  EXPECT_NO_THROW(validateInput(good()));
  EXPECT_NO_THROW(validateInput(good().cast<float>()));
  AttentionInput<double> noOptionals = good();
  noOptionals.V.reset();
  noOptionals.mask.reset();
  EXPECT_NO_THROW(validateInput(noOptionals));
  AttentionInput<double> rect;  // cross-attention shapes
  rect.Q = test::gaussian(3, 4, 5);
  rect.K = test::gaussian(7, 4, 6);
  EXPECT_NO_THROW(validateInput(rect));
}

TEST(AttentionInput, AccessorsAndCast) {
  const auto in = good(6, 4);
  EXPECT_EQ(in.nQueries(), 6);
  EXPECT_EQ(in.nKeys(), 6);
  EXPECT_EQ(in.headDim(), 4);
  const auto f = in.cast<float>();
  EXPECT_TRUE(test::matricesNear(f.Q, in.Q, 1e-6));
  ASSERT_TRUE(f.V.has_value());
  ASSERT_TRUE(f.mask.has_value());
  EXPECT_EQ(f.mask->size(), 6);
}

TEST(AttentionInput, RejectsShapeMismatches) {
  auto a = good();
  a.K = test::gaussian(6, 5, 9);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(a); }));
  auto b = good();
  b.V = test::gaussian(5, 3, 9);  // V rows must equal n_k
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(b); }, {"V"}));
  auto c = good();
  c.mask = Mask::Constant(4, true);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(c); }, {"mask"}));
  auto e = good();
  e.Q.resize(0, 4);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(e); }, {"Q"}));
}

TEST(AttentionInput, RejectsNonFiniteValuesNamingTheTensor) {
  auto q = good();
  q.Q(1, 2) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(q); }, {"Q"}));
  auto k = good();
  k.K(0, 0) = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(k); }, {"K"}));
  auto v = good();
  v.V->coeffRef(2, 1) = -std::numeric_limits<double>::infinity();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(v); }, {"V"}));
  auto f = good().cast<float>();
  f.Q(0, 0) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { validateInput(f); }, {"Q"}));
}

// allEntriesFinite (common/matrix.h) finds one NaN or ±Inf at any position of row-major matrices and vectors
// of either precision, longer than a vector register, and accepts the largest finite values.
TEST(AllEntriesFinite, FindsEveryNonFiniteEntryAndAcceptsHugeFiniteOnes) {
  const double bad[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity()};
  MatD m = test::gaussian(7, 13, 4);
  m(3, 5) = std::numeric_limits<double>::max();
  m(6, 12) = -std::numeric_limits<double>::max();
  EXPECT_TRUE(allEntriesFinite(m));
  EXPECT_TRUE(allEntriesFinite(MatF(m.cast<float>().cwiseMin(1e30f).cwiseMax(-1e30f))));
  for (const double value : bad)
    for (Eigen::Index i = 0; i < m.size(); i += 10) {
      MatD withBad = m;
      withBad.data()[i] = value;
      EXPECT_FALSE(allEntriesFinite(withBad)) << value << " at entry " << i;
      MatF single = m.cast<float>().cwiseMin(1e30f).cwiseMax(-1e30f);
      single.data()[i] = float(value);
      EXPECT_FALSE(allEntriesFinite(single)) << value << " at entry " << i << " (float32)";
    }
  VecD v = VecD::Ones(33);
  EXPECT_TRUE(allEntriesFinite(v));
  v(32) = bad[1];
  EXPECT_FALSE(allEntriesFinite(v));
}

}  // namespace
}  // namespace tl
