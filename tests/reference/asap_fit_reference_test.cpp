// Cross-check of the ASAP fit (core/ops/asap/fit_*.cpp) against the independent PyTorch formulation
// scripts/reference/asap_fit_reference.py (fixtures in tests/fixtures/asap_fit, made by
// make_asap_fit_fixtures.py): β of the LS fit (an augmented least-squares solve there, normal equations
// here) and of the KL fit (Newton on autograd's Hessian there) agree to 1e-10 in float64
// (docs/operators/asap.md#checks), and so do R² and δ.
#include <gtest/gtest.h>

#include <string>

#include "fixture_case.h"
#include "io/npy.h"
#include "ops/asap/asap_fit.h"
#include "ops/mask_mode.h"

namespace tl::testing {
namespace {

constexpr double kTol = 1e-10;

struct FitCase {
  std::string name;
  nlohmann::json entry;
  explicit FitCase(const nlohmann::json& c) : name(c.at("name").get<std::string>()), entry(c) {}
  std::string file(const std::string& stem) const { return fixtureRoot("asap_fit") + "/" + name + "/" + stem + ".npy"; }
  std::vector<FitInstance> instances() const {
    const bool masked = entry.at("mask").get<bool>();
    return readFitInstances(file("q"), file("k"), file("u"), masked ? std::optional(file("mask")) : std::nullopt);
  }
  FitSettings settings() const {
    return {entry.at("eps").get<double>(), parseMaskMode(entry.at("mask_mode").get<std::string>())};
  }
  // The reference iterates to ‖∇J‖ < 1e-13; β agrees to 1e-10 only when both do.
  LayerFit fit(FitKind kind) const {
    return fitLayer(instances(), readNpyMatrix<double>(file("slices")), settings(), entry.at("lambda_b").get<double>(),
                    kind, noFeedback(), 1e-13);
  }
};

class AsapFitFixture : public ::testing::TestWithParam<FitCase> {};

TEST(AsapFitFixtureManifest, ListsTheCommittedCases) { EXPECT_EQ(checkManifest("asap_fit", 5), std::nullopt); }

TEST_P(AsapFitFixture, LsMatchesReference) {
  const FitCase& c = GetParam();
  const LayerFit fit = c.fit(FitKind::Ls);
  EXPECT_EQ(compareWithInf(MatD(fit.beta), readNpyMatrix<double>(c.file("beta_ls")), kTol), std::nullopt);
  EXPECT_EQ(fit.ls.rows, c.entry.at("rows").get<Eigen::Index>());
  EXPECT_NEAR(fit.quality.r2, c.entry.at("r2_ls").get<double>(), kTol);
  EXPECT_NEAR(fit.quality.delta, c.entry.at("delta_ls").get<double>(), kTol);
}

TEST_P(AsapFitFixture, KlMatchesReference) {
  const FitCase& c = GetParam();
  const LayerFit fit = c.fit(FitKind::Kl);
  ASSERT_TRUE(fit.kl.has_value());
  EXPECT_TRUE(fit.kl->converged) << fit.kl->gradientNorm;
  EXPECT_EQ(compareWithInf(MatD(fit.beta), readNpyMatrix<double>(c.file("beta_kl")), kTol), std::nullopt);
  EXPECT_NEAR(fit.quality.r2, c.entry.at("r2_kl").get<double>(), kTol);
  EXPECT_NEAR(fit.quality.delta, c.entry.at("delta_kl").get<double>(), kTol);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AsapFitFixture, ::testing::ValuesIn(loadCases<FitCase>("asap_fit")),
                         [](const auto& info) { return info.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AsapFitFixture);

}  // namespace
}  // namespace tl::testing
