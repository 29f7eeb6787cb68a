// Cross-check of the banded backward (core/ops/banded/banded_gradients.cpp) against PyTorch autograd of the
// same surrogate, base under no_grad (scripts/reference/make_banded_grad_fixtures.py, fixtures in
// tests/fixtures/banded_grad). Tolerances (docs/operators/banded.md#checks, oracle 4):
//   float64: max |dX − dX_ref| ≤ 1e-10·max(1, max |dX_ref|) for X in Q, K, V, both for the surrogate (both tail
//            schedules) and for full backpropagation;
//   float32 kernel against the float64 reference, scale-aware: dQ, dK within 256·u₃₂·M_X (M_X the uncancelled
//            magnitude of the gradient, from the fixture), dV within 8·u₃₂·max_j Σ_i A_ij‖G_i‖. Never a relative
//            L2 on dQ in float32.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/params.h"
#include "fixture_case.h"
#include "ops/banded/banded_gradients.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

constexpr double kU32 = 5.9604644775390625e-08;  // 2^-24

struct GradCase : ReferenceCase {
  double mQ = 0, mK = 0, mV = 0;
  int tailSteps = 0;

  explicit GradCase(const nlohmann::json& c)
      : ReferenceCase("banded_grad", c),
        mQ(c.at("m_q").get<double>()),
        mK(c.at("m_k").get<double>()),
        mV(c.at("m_v").get<double>()),
        tailSteps(c.at("tail_steps").get<int>()) {}

  BandedParams params() const {
    return BandedParams::from(OperatorRegistry::builtin().parse(op).params);
  }
};

double maxAbs(const MatD& m) { return m.cwiseAbs().maxCoeff(); }

// max |actual − expected| relative to max(1, max |expected|).
double scaledError(const MatD& actual, const MatD& expected) {
  EXPECT_EQ(actual.rows(), expected.rows());
  EXPECT_EQ(actual.cols(), expected.cols());
  if (actual.rows() != expected.rows() || actual.cols() != expected.cols()) return HUGE_VAL;
  return maxAbs(actual - expected) / std::max(1.0, maxAbs(expected));
}

class BandedGradFixture : public ::testing::TestWithParam<GradCase> {};

TEST(BandedGradFixtureManifest, ListsTheCommittedCases) { EXPECT_EQ(checkManifest("banded_grad", 16), std::nullopt); }

TEST_P(BandedGradFixture, SurrogateFloat64MatchesAutograd) {
  const GradCase& c = GetParam();
  const MatD G = c.expected("g");
  for (auto schedule : {BandedTailSchedule::OneReference, BandedTailSchedule::Direct}) {
    const auto g = bandedGradients(c.input(), c.params(), G, {BandedGradientMode::Surrogate, schedule});
    const char* name = schedule == BandedTailSchedule::Direct ? "direct" : "one-reference";
    EXPECT_LE(scaledError(g.dQ, c.expected("dq")), 1e-10) << name << " dQ";
    EXPECT_LE(scaledError(g.dK, c.expected("dk")), 1e-10) << name << " dK";
    EXPECT_LE(scaledError(g.dV, c.expected("dv")), 1e-10) << name << " dV";
  }
}

TEST_P(BandedGradFixture, FullBackpropagationFloat64MatchesAutograd) {
  const GradCase& c = GetParam();
  const auto g = bandedGradients(c.input(), c.params(), c.expected("g"), {BandedGradientMode::Full});
  EXPECT_LE(scaledError(g.dQ, c.expected("full_dq")), 1e-10) << "dQ";
  EXPECT_LE(scaledError(g.dK, c.expected("full_dk")), 1e-10) << "dK";
  EXPECT_LE(scaledError(g.dV, c.expected("full_dv")), 1e-10) << "dV";
}

// The output the gradients belong to is the operator's own output (what `tlens plan` writes).
TEST_P(BandedGradFixture, OutputIsTheOperatorsOutput) {
  const GradCase& c = GetParam();
  const auto g = bandedGradients(c.input(), c.params(), c.expected("g"));
  const auto op = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse(c.op));
  const auto r = op->run(c.input(), noFeedback());
  EXPECT_LE(scaledError(g.output, *r.output), 1e-12);
}

TEST_P(BandedGradFixture, Float32WithinScaleAwareTolerance) {
  const GradCase& c = GetParam();
  const auto g = bandedGradients(c.input().cast<float>(), c.params(), MatF(c.expected("g").cast<float>()));
  EXPECT_LE(maxAbs(g.dQ.cast<double>() - c.expected("dq")), 256 * kU32 * c.mQ) << "dQ";
  EXPECT_LE(maxAbs(g.dK.cast<double>() - c.expected("dk")), 256 * kU32 * c.mK) << "dK";
  EXPECT_LE(maxAbs(g.dV.cast<double>() - c.expected("dv")), 8 * kU32 * c.mV) << "dV";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BandedGradFixture, ::testing::ValuesIn(loadCases<GradCase>("banded_grad")),
                         [](const auto& info) { return testName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BandedGradFixture);

}  // namespace
}  // namespace tl::testing
