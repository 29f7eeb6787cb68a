// Every family across eps from 1e-4 to 1e4 and score magnitudes up to 1e6, in float64 and float32: either a valid
// result (no NaN or Inf, the marginal the family guarantees within rounding) or the InvalidArgument that names the
// scaled scores and says what to change (docs/conventions.md#overflow). Never a silently invalid plan: before the
// check, sinkhorn:eps=1e-300 returned column sums of 64 right after a column normalisation, with exit code 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "common/errors.h"
#include "io/npy.h"
#include "ops/registry.h"
#include "support/test_util.h"

namespace tl {
namespace {

// Which marginal a family holds exactly by construction (docs/operators/): the side its last step normalises.
enum class Guarantee { Rows, Columns, Both, RowsSumToOneMinusLambda };

struct Family {
  std::string spec;  // without eps
  bool hasEps;
  Guarantee guarantee;
};

template <class T>
double largestGuaranteeError(const PlanResult<T>& r, Guarantee g) {
  const MatD A = r.plan.dense().template cast<double>();
  switch (g) {
    case Guarantee::Rows:
      return r.errors.rowMax;
    case Guarantee::Columns:
      return r.errors.colMax;
    case Guarantee::Both:
      return std::max(r.errors.rowMax, r.errors.colMax);
    case Guarantee::RowsSumToOneMinusLambda:
      return (A.rowwise().sum().array() - 0.7).abs().maxCoeff();  // diff:lambda=0.3
  }
  return 0;
}

template <class T>
void sweep(const std::string& asapDual) {
  const std::vector<Family> families = {
      {"softmax", false, Guarantee::Rows},
      {"sinkhorn:T=10", true, Guarantee::Columns},
      {"esp", false, Guarantee::Both},
      {"lot:r=8", true, Guarantee::Rows},
      {"asap:variant=two-sided,closing=column,dual=" + asapDual, true, Guarantee::Columns},
      {"banded:W=4,base_steps=3,tail_steps=2", true, Guarantee::Columns},
      {"diff:lambda=0.3", false, Guarantee::RowsSumToOneMinusLambda},
  };
  // Every family of the registry is swept: a new one must say here what it guarantees.
  ASSERT_EQ(families.size(), OperatorRegistry::builtin().families().size());
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const int n = 24, d = 8;
  int valid = 0, refused = 0;
  for (const Family& family : families)
    for (double scoreScale : {1.0, 1e2, 1e4, 1e6})
      for (double eps : family.hasEps ? std::vector<double>{1e-4, 1e-2, 1.0, 1e2, 1e4} : std::vector<double>{1.0}) {
        // Gaussian rows scaled so that |S| = |QKᵀ|/√d is about scoreScale.
        const MatD Q = test::gaussian(n, d, 11, std::sqrt(scoreScale)), K = test::gaussian(n, d, 12, std::sqrt(scoreScale));
        AttentionInput<double> in{Q, K, test::gaussian(n, 3, 13), std::nullopt};
        const std::string spec =
            family.spec + (family.hasEps ? (family.spec.find(':') == std::string::npos ? ":" : ",") +
                                               std::string("eps=") + std::to_string(eps)
                                         : "");
        SCOPED_TRACE(spec + " at |S| ~ " + std::to_string(scoreScale) + (sizeof(T) == 4 ? ", float32" : ", float64"));
        const auto op = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse(spec));
        try {
          const PlanResult<T> r = op->run(in.template cast<T>(), noFeedback());
          const MatD A = r.plan.dense().template cast<double>();
          ASSERT_TRUE(A.allFinite());
          ASSERT_TRUE(r.output && r.output->allFinite());
          // The guaranteed side holds to rounding, which grows with the largest scaled score |X| = |S|/eps: the
          // exponent of each plan entry carries an absolute error of a few |X|·u.
          const double largestX = test::referenceScores(Q, K).cwiseAbs().maxCoeff() / eps;
          const double tolerance = (sizeof(T) == 4 ? 1e-4 : 1e-10) + 16 * largestX * u;
          EXPECT_LE(largestGuaranteeError(r, family.guarantee), tolerance);
          ++valid;
        } catch (const InvalidArgument& e) {
          const std::string message = e.what();
          const bool namesTheScores = message.find("S/eps") != std::string::npos ||
                                      message.find("QKᵀ") != std::string::npos ||
                                      message.find("slice costs") != std::string::npos;
          EXPECT_TRUE(namesTheScores) << message;
          EXPECT_NE(message.find("scale the queries and keys down"), std::string::npos) << message;
          ++refused;
        }
      }
  // float64 resolves every case of this range (|S|/eps ≤ 1e11 < 8.8e12); float32 must refuse the small-eps, large-score
  // corner (|S|/eps above 16384) and still run the rest. A check that refused everything would fail here.
  EXPECT_GT(valid, 40);
  if (sizeof(T) == 4) {
    EXPECT_GT(refused, 10);
  }
  std::printf("%s: %d valid results, %d refusals\n", sizeof(T) == 4 ? "float32" : "float64", valid, refused);
}

class OverflowStress : public ::testing::Test {
 protected:
  // ASAP needs a source dual of the right length; any finite one serves (its values are what ASAP closes from).
  void SetUp() override { writeNpy(dir_.file("u.npy"), VecD(VecD::LinSpaced(24, -1.0, 1.0))); }
  test::TempDir dir_;
};

TEST_F(OverflowStress, EveryFamilyIsValidOrRefusesInFloat64) { sweep<double>(dir_.file("u.npy")); }
TEST_F(OverflowStress, EveryFamilyIsValidOrRefusesInFloat32) { sweep<float>(dir_.file("u.npy")); }

// The refusal itself: names the largest |S|/eps and a sufficient eps, and is an InvalidArgument (CLI exit 2).
TEST(ScaledScoreCheck, RefusalNamesTheLargestScaledScoreAndAnEpsThatWorks) {
  const MatD Q = test::gaussian(16, 4, 1), K = test::gaussian(16, 4, 2);
  const auto op = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse("sinkhorn:eps=1e-300"));
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([&] { op->run(AttentionInput<double>{Q, K, std::nullopt, std::nullopt}, noFeedback()); },
                                                {"largest |S|/eps is", "e+", "raise eps to at least"}));
  // QKᵀ itself overflowing (entries near 1e200): named as such.
  const MatD huge = Q * 1e200;
  const auto softmax = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse("softmax"));
  EXPECT_TRUE(test::throwsWith<InvalidArgument>(
      [&] { softmax->run(AttentionInput<double>{huge, huge, std::nullopt, std::nullopt}, noFeedback()); }, {"QKᵀ", "overflow"}));
}

}  // namespace
}  // namespace tl
