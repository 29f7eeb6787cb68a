// Every bundled checkpoint (sample_checkpoints/<name>/) keeps what its model card promises: `tlens eval` on
// all 10000 Fashion-MNIST test images reproduces the card's test accuracy (up to a few prediction flips;
// hard-sorted ESP within the band its card states, see allowedFlips), the card promises at least 85 %, and
// its training command trained the normaliser config.json names.
// Needs the real test set (Debian's dataset-fashion-mnist, installed by scripts/setup); about a minute each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_runner.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kCheckpoints = fs::path(TL_SOURCE_DIR) / "sample_checkpoints";
constexpr int kTestImages = 10000;  // the whole Fashion-MNIST test set: one image is 0.01 pp

// How many test images the count of correct predictions may move from the card's. Float rounding differs
// between CPUs and builds (-march=native, LibTorch's per-CPU kernels), and a prediction whose two best logits
// nearly tie may flip with it. The continuous normalisers move their logits by rounding-sized amounts, so only
// images whose two best logits agree to that precision can flip: allow 10 flips (0.1 pp), still far below the
// whole percentage points that a broken normaliser or checkpoint costs. Hard-sorted ESP is discontinuous in
// its inputs: rounding reorders near-tied projections and flips more borderline predictions (computing D_l
// and A·V in another order flipped 3 of 1000 here), so its card states a band of 0.5 pp (50 flips).
int allowedFlips(const OperatorSpec& attention) {
  const bool hardEsp = attention.family == "esp" && getString(attention.params, "sort") == "hard";
  return hardEsp ? 50 : 10;
}

// The checkpoint's own normaliser, as config.json's TransportLens block names it.
OperatorSpec configAttention(const fs::path& dir) {
  const auto config = nlohmann::json::parse(readText((dir / "config.json").string()));
  return OperatorRegistry::builtin().parse(config.at("transportlens").at("attention").get<std::string>());
}

std::vector<std::string> bundledCheckpoints() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kCheckpoints))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The card's "| **test accuracy** | **86.07 %** ..." row, in percent; NaN when the card has none.
double cardAccuracy(const std::string& card) {
  std::smatch m;
  static const std::regex row(R"(\|\s*\*\*test accuracy\*\*\s*\|\s*\*\*([0-9]+\.[0-9]{2}) %\*\*)");
  return std::regex_search(card, m, row) ? std::stod(m[1]) : NAN;
}

// The operator family of the card's `tlens train --attention SPEC` command ("" when there is none).
std::string cardTrainingFamily(const std::string& card) {
  std::smatch m;
  static const std::regex command(R"(tlens train[^\n]*--attention\s+"?([a-z]+))");
  return std::regex_search(card, m, command) ? std::string(m[1]) : std::string();
}

class SampleCheckpoint : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return kCheckpoints / GetParam(); }
};

TEST_P(SampleCheckpoint, CardNamesTheTrainedNormaliser) {
  const std::string card = readText((dir() / "README.md").string());
  EXPECT_EQ(cardTrainingFamily(card), configAttention(dir()).family)
      << "the model card's tlens train command and config.json disagree on the normaliser";
}

TEST_P(SampleCheckpoint, EvalReproducesTheCardsTestAccuracy) {
  const double promised = cardAccuracy(readText((dir() / "README.md").string()));
  ASSERT_FALSE(std::isnan(promised)) << "the model card has no '| **test accuracy** | **NN.NN %**' row";
  EXPECT_GE(promised, 85.0);
  const std::string json = scratchDir("eval") + "/eval.json";
  const CliRun run = runTlens({"eval", dir().string(), "--split", "test", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err << "\n(the real Fashion-MNIST test set comes from Debian's "
                                         "dataset-fashion-mnist, which scripts/setup installs)";
  const auto result = nlohmann::json::parse(readText(json));
  ASSERT_EQ(result.at("images").get<int>(), kTestImages);
  // Both in images: the card's two decimals of a percentage of 10000 images are a whole number of images.
  const long promisedCorrect = std::lround(promised * kTestImages / 100);
  const long correct = std::lround(result.at("accuracy").get<double>() * kTestImages);
  EXPECT_LE(std::abs(correct - promisedCorrect), allowedFlips(configAttention(dir())))
      << correct << " of " << kTestImages << " test images correct; the card says " << promisedCorrect;
}

INSTANTIATE_TEST_SUITE_P(Bundled, SampleCheckpoint, ::testing::ValuesIn(bundledCheckpoints()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace tl::testing
