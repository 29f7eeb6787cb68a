// The banded backward (docs/operators/banded.md#gradients) against the oracles of docs/operators/banded.md#checks
// that need no fixture: finite differences (5), one-reference = direct (6), adjoint totals (7), the orbit and
// gauge ledger (8, 9), gauge invariance (3), tiling invariance (15) and row-shift invariance (16). The
// comparison with PyTorch autograd is tests/reference/banded_grad_reference_test.cpp.
#include "ops/banded/banded_gradients.h"

#include <gtest/gtest.h>

#include "ops/banded/banded_tail.h"
#include "ops/banded/banded_test_util.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::throwsWith;

using test::bandedInput;
using test::bandedParams;
using test::maxAbs;

// The surrogate's loss at `input` with the base state taken from `baseInput` (the stopped constant).
double stoppedLoss(const AttentionInput<double>& input, const AttentionInput<double>& baseInput, const BandedParams& p,
                   const MatD& G) {
  const auto base = banded::makeSystem(baseInput, p, &G);
  auto baseIt = banded::startIterates(base);
  banded::appendSteps(base, baseIt, p.baseSteps, true);
  const auto sys = banded::makeSystem(input, p, &G);
  banded::Iterates<double> it;
  it.u = {baseIt.u.back()};
  it.v = {baseIt.v.back()};
  it.m = {0.0};
  banded::appendSteps(sys, it, p.tailSteps, false);
  const MatD O = sys.X->apply(it.u.back(), it.v.back(), 1.0, sys.V);
  return (sys.G.array() * O.array()).sum();
}

// Oracle 5: central differences, h = 1e-6, base held fixed; ≤ 1e-7·max(1, max |grad|).
TEST(BandedGradients, MatchFiniteDifferencesOfTheStoppedBaseLoss) {
  const auto in = bandedInput(9, 11, 3, 2, 40);
  const MatD G = gaussian(9, 2, 44);
  for (int R : {0, 1, 2, 3, 4}) {
    const BandedParams p = bandedParams(2, 5, R, 0.8);
    const auto g = bandedGradients(in, p, G);
    const double scale = std::max({1.0, maxAbs(g.dQ), maxAbs(g.dK), maxAbs(g.dV)});
    double worst = 0;
    for (int which = 0; which < 3; ++which) {
      const MatD& grad = which == 0 ? g.dQ : which == 1 ? g.dK : g.dV;
      for (int r = 0; r < grad.rows(); ++r)
        for (int c = 0; c < grad.cols(); ++c) {
          auto at = [&](double h) {
            auto moved = in;
            MatD& x = which == 0 ? moved.Q : which == 1 ? moved.K : *moved.V;
            x(r, c) += h;
            return stoppedLoss(moved, in, p, G);
          };
          worst = std::max(worst, std::abs((at(1e-6) - at(-1e-6)) / 2e-6 - grad(r, c)));
        }
    }
    EXPECT_LE(worst, 1e-7 * scale) << "R=" << R;
  }
}

// Oracle 6: the one-reference schedule equals the direct four-plan form, on a longer band and with a dustbin.
TEST(BandedGradients, OneReferenceEqualsDirectFourPlan) {
  for (bool dustbin : {false, true}) {
    const auto in = bandedInput(120, 120, 8, 4, 50);
    const MatD G = gaussian(120, 4, 53);
    const BandedParams p = bandedParams(17, 15, 2, 1.0, dustbin);
    const auto one = bandedGradients(in, p, G, {BandedGradientMode::Surrogate, BandedTailSchedule::OneReference});
    const auto direct = bandedGradients(in, p, G, {BandedGradientMode::Surrogate, BandedTailSchedule::Direct});
    for (const auto& [a, b] : {std::pair{one.dQ, direct.dQ}, {one.dK, direct.dK}, {one.dV, direct.dV}})
      EXPECT_LE(maxAbs(a - b), 1e-13 * std::max(1.0, maxAbs(b))) << "dustbin=" << dustbin;
    const auto oneF = bandedGradients(in.cast<float>(), p, MatF(G.cast<float>()));
    const auto directF = bandedGradients(in.cast<float>(), p, MatF(G.cast<float>()),
                                         {BandedGradientMode::Surrogate, BandedTailSchedule::Direct});
    EXPECT_LE(maxAbs((oneF.dQ - directF.dQ).cast<double>()), 1e-6);
    EXPECT_LE(maxAbs((oneF.dK - directF.dK).cast<double>()), 1e-6);
  }
}

// Oracle 7 (Lemma 3): Σ g_u = Σ g_v, and the cotangent left on the base state sums to zero for R ≥ 1.
TEST(BandedGradients, AdjointTotalsBalance) {
  const auto in = bandedInput(30, 30, 4, 3, 60);
  const MatD G = gaussian(30, 3, 63);
  const BandedParams p = bandedParams(4, 6, 4);
  const auto sys = banded::makeSystem(in, p, &G);
  auto it = banded::startIterates(sys);
  banded::appendSteps(sys, it, 6, true);
  banded::appendSteps(sys, it, 4, false);
  for (int R = 1; R <= 4; ++R) {
    const auto pb = banded::pullBackOutput(sys, it, 6, 6 + R);
    const double scale = pb.gu.cwiseAbs().sum();
    EXPECT_LE(std::abs(pb.gu.sum() - pb.gv.sum()), 1e-12 * scale) << "R=" << R;
    EXPECT_LE(std::abs(pb.etaV.sum()), 1e-12 * std::max(scale, pb.etaV.cwiseAbs().sum())) << "R=" << R;
    EXPECT_EQ(pb.etaU.cwiseAbs().maxCoeff(), 0.0);  // u^(0) does not enter a tail of R ≥ 1
  }
}

// Oracles 8, 9: the centred base and the raw chain are one orbit: u_raw = u_c + c_t, v_raw = v_c − c_t with
// c_t = Σ m_s, and the ledger's raw mixed plan exp(m_t)·exp(X + u_c[t] ⊕ v_c[t−1]) is row-stochastic, the
// same-time plan column-stochastic.
TEST(BandedGradients, GaugeLedgerReconstructsTheRawChain) {
  const auto in = bandedInput(25, 25, 4, 2, 70);
  const auto sys = banded::makeSystem(in, bandedParams(3, 10, 0));
  auto centred = banded::startIterates(sys), raw = banded::startIterates(sys);
  banded::appendSteps(sys, centred, 10, true);
  banded::appendSteps(sys, raw, 10, false);
  double c = 0;
  for (int t = 1; t <= 10; ++t) {
    c += centred.m[size_t(t)];
    EXPECT_LE(maxAbs(raw.u[size_t(t)] - (centred.u[size_t(t)].array() + c).matrix()), 1e-12) << t;
    EXPECT_LE(maxAbs(raw.v[size_t(t)] - (centred.v[size_t(t)].array() - c).matrix()), 1e-12) << t;
    const VecD shiftedU = (centred.u[size_t(t)].array() + centred.m[size_t(t)]).matrix();
    const MatD mixed = sys.X->planRows(shiftedU, centred.v[size_t(t - 1)], 1.0, 0, 25);
    const MatD same = sys.X->planRows(centred.u[size_t(t)], centred.v[size_t(t)], 1.0, 0, 25);
    EXPECT_LE((mixed.rowwise().sum().array() - 1).abs().maxCoeff(), 1e-12) << t;
    EXPECT_LE((same.colwise().sum().array() - 1).abs().maxCoeff(), 1e-12) << t;
  }
}

// Oracle 3: a constant moved between u^(0) and v^(0) (a gauge) changes neither the output nor the gradient.
TEST(BandedGradients, GaugeOfTheBaseStateDoesNotMatter) {
  const auto in = bandedInput(20, 20, 4, 3, 80);
  const MatD G = gaussian(20, 3, 83);
  const auto sys = banded::makeSystem(in, bandedParams(3, 5, 2), &G);
  auto it = banded::startIterates(sys);
  banded::appendSteps(sys, it, 5, true);
  banded::appendSteps(sys, it, 2, false);
  banded::Iterates<double> shifted;
  shifted.u = {(it.u[5].array() - 3.25).matrix()};
  shifted.v = {(it.v[5].array() + 3.25).matrix()};
  shifted.m = {0.0};
  banded::appendSteps(sys, shifted, 2, false);
  const auto a = banded::pullBackOutput(sys, it, 5, 7);
  const auto b = banded::pullBackOutput(sys, shifted, 0, 2);
  EXPECT_LE(maxAbs(a.dQ - b.dQ), 1e-12 * maxAbs(a.dQ));
  EXPECT_LE(maxAbs(a.dK - b.dK), 1e-12 * maxAbs(a.dK));
  EXPECT_LE(maxAbs(a.dV - b.dV), 1e-12 * maxAbs(a.dV));
}

// Oracle 16: for R ≥ 1 the surrogate ignores a per-key shift of K (S_ij + a_i), so Σ_j dK_j = 0 and the
// output does not move; at R = 0 (u^(0) stopped) neither holds.
TEST(BandedGradients, RowShiftInvarianceFromOneTailStep) {
  const auto in = bandedInput(24, 24, 4, 3, 90);
  const MatD G = gaussian(24, 3, 93);
  const VecD k0 = gaussian(4, 1, 94).col(0);
  for (int R : {0, 1, 2, 4}) {
    const auto g = bandedGradients(in, bandedParams(3, 6, R), G);
    const double total = g.dK.colwise().sum().cwiseAbs().maxCoeff();
    const double scale = g.dK.cwiseAbs().colwise().sum().maxCoeff();
    auto shifted = in;
    shifted.K = in.K.rowwise() + k0.transpose();
    const auto moved = bandedGradients(shifted, bandedParams(3, 6, R), G);
    if (R >= 1) {
      EXPECT_LE(total, 1e-12 * scale) << "R=" << R;
      EXPECT_LE(maxAbs(moved.output - g.output), 1e-12 * maxAbs(g.output)) << "R=" << R;
    } else {
      EXPECT_GT(total, 1e-6 * scale);
    }
  }
}

// Oracle 15: the tile size only groups the certificates; the gradients do not depend on it.
TEST(BandedGradients, IndependentOfTheTileSize) {
  const auto in = bandedInput(70, 70, 4, 3, 100);
  const MatD G = gaussian(70, 3, 103);
  BandedParams p = bandedParams(9, 8, 2);
  p.tile = 16;
  const auto ref = bandedGradients(in, p, G);
  for (int tile : {32, 64, 128}) {
    p.tile = tile;
    const auto g = bandedGradients(in, p, G);
    EXPECT_EQ(maxAbs(g.dQ - ref.dQ), 0.0);
    EXPECT_EQ(maxAbs(g.dK - ref.dK), 0.0);
  }
}

// Oracle 1: padded tokens get exactly zero gradient rows and their values do not matter.
TEST(BandedGradients, PaddedTokensGetZeroRows) {
  auto in = bandedInput(12, 12, 4, 3, 110);
  in.mask = test::makeMask({true, true, false, true, true, true, true, false, true, true, true, true});
  const MatD G = gaussian(12, 3, 113);
  const auto g = bandedGradients(in, bandedParams(2, 5, 2), G);
  for (int r : {2, 7}) {
    EXPECT_EQ(g.dQ.row(r).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(g.dK.row(r).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(g.dV.row(r).cwiseAbs().maxCoeff(), 0.0);
  }
  auto noisy = in;
  noisy.Q.row(2).setConstant(40);
  noisy.K.row(7).setConstant(-9);
  const auto h = bandedGradients(noisy, bandedParams(2, 5, 2), G);
  EXPECT_EQ(maxAbs(h.dQ - g.dQ), 0.0);
  EXPECT_EQ(maxAbs(h.dK - g.dK), 0.0);
}

TEST(BandedGradients, RefusesAMismatchedCotangentOrMissingValues) {
  const auto in = bandedInput(10, 10, 4, 3, 120);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { bandedGradients(in, bandedParams(2, 3, 2), MatD(MatD::Ones(10, 2))); },
                                          {"G is 10×2 but the output is 10×3"}));
  auto noValues = in;
  noValues.V.reset();
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { bandedGradients(noValues, bandedParams(2, 3, 2), MatD(MatD::Ones(10, 3))); }, {"V is required"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { bandedGradients(in, bandedParams(2, 0, 0), MatD(MatD::Ones(10, 3))); },
                                          {"base_steps + tail_steps = 0"}));
}

}  // namespace
}  // namespace tl
