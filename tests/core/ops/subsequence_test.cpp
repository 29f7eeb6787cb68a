// mask_mode=subsequence for any operator: run on the valid tokens, scatter back with zeros / -inf.
#include "ops/subsequence.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::kInf;
using test::matricesNear;

// A stand-in operator whose every field is a simple function of its input, so the scatter can be
// checked entry by entry: plan = Q Kᵀ, u = Q[:,0], v = K[:,0], output = plan V.
PlanResult<double> fakeOperator(const AttentionInput<double>& in, int* calls, int* seenRows, bool* sawPadding) {
  ++*calls;
  *seenRows = in.nQueries();
  *sawPadding = in.mask.has_value() && !in.mask->all();
  PlanResult<double> r;
  r.plan = in.Q * in.K.transpose();
  if (in.V) r.output = r.plan.dense() * *in.V;
  r.u = in.Q.col(0);
  r.v = in.K.col(0);
  r.rowTarget = VecD::Ones(in.nQueries());
  r.colTarget = VecD::Ones(in.nKeys());
  return r;
}

TEST(Subsequence, ScattersValidBlockAndZeroesPadding) {
  const int n = 7;
  const std::vector<bool> valid = {false, true, true, false, true, true, false};
  const std::vector<int> idx = {1, 2, 4, 5};
  AttentionInput<double> in;
  in.Q = gaussian(n, 3, 1);
  in.K = gaussian(n, 3, 2);
  in.V = gaussian(n, 2, 3);
  in.mask = test::makeMask(valid);
  int calls = 0, seenRows = 0;
  bool sawPadding = true;
  const PlanFunction<double> run = [&](const AttentionInput<double>& x) {
    return fakeOperator(x, &calls, &seenRows, &sawPadding);
  };
  const auto r = runOnValidSubsequence<double>(in, run);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seenRows, 4) << "the operator must see only the valid tokens";
  EXPECT_FALSE(sawPadding);
  ASSERT_EQ(r.plan.rows(), n);
  ASSERT_EQ(r.plan.cols(), n);
  ASSERT_TRUE(r.output.has_value());
  ASSERT_EQ(r.u.size(), n);
  ASSERT_EQ(r.v.size(), n);
  const MatD Qv = test::selectRows(in.Q, idx), Kv = test::selectRows(in.K, idx), Vv = test::selectRows(*in.V, idx);
  const MatD block = Qv * Kv.transpose();
  const MatD out = block * Vv;
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) EXPECT_EQ(r.plan(idx[a], idx[b]), block(a, b));
    EXPECT_TRUE(matricesNear(r.output->row(idx[a]), out.row(a), 1e-14));
    EXPECT_EQ(r.u(idx[a]), Qv(a, 0));
    EXPECT_EQ(r.v(idx[a]), Kv(a, 0));
    EXPECT_TRUE(test::near(r.rowTarget(idx[a]), 1.0, 1e-15));
    EXPECT_TRUE(test::near(r.colTarget(idx[a]), 1.0, 1e-15));
  }
  for (int i = 0; i < n; ++i) {
    if (valid[i]) continue;
    EXPECT_EQ(r.plan.dense().row(i).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(r.plan.dense().col(i).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(r.output->row(i).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(r.u(i), -kInf);
    EXPECT_EQ(r.v(i), -kInf);
    EXPECT_EQ(r.rowTarget(i), 0.0) << "padded rows have target 0 (docs/conventions.md#marginal-errors)";
    EXPECT_EQ(r.colTarget(i), 0.0);
  }
}

TEST(Subsequence, WithoutPaddingCallsThrough) {
  AttentionInput<double> in;
  in.Q = gaussian(5, 2, 4);
  in.K = gaussian(5, 2, 5);
  for (bool withMask : {false, true}) {
    if (withMask) in.mask = Mask::Constant(5, true);
    int calls = 0, seenRows = 0;
    bool sawPadding = false;
    const PlanFunction<double> run = [&](const AttentionInput<double>& x) {
      return fakeOperator(x, &calls, &seenRows, &sawPadding);
    };
    const auto r = runOnValidSubsequence<double>(in, run);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(seenRows, 5);
    EXPECT_TRUE(matricesNear(r.plan.dense(), MatD(in.Q * in.K.transpose()), 0.0));
  }
}

}  // namespace
}  // namespace tl
