// `transportlens --measure-latency` end to end: the report of a cloud run for a chosen family, device and
// number of moves, and its refusals (a family without a numeric parameter, a computation that fails).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace tl::testing {
namespace {

CliRun measure(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--measure-latency", "--n", "64", "--moves", "3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return runProgram(TL_TRANSPORTLENS_PATH, args, "QT_QPA_PLATFORM=offscreen");
}

TEST(MeasureLatency, TimesTheChosenFamilysSliderOnTheChosenDevice) {
  const std::string dir = scratchDir("latency");
  const CliRun run = measure({"--op", "lot:r=4,T=3", "--device", "cpu", "--json", dir + "/latency.json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(readText(dir + "/latency.json"));
  EXPECT_EQ(report.at("moved"), "T");  // LOT has T: it is the one that moves
  EXPECT_EQ(report.at("n"), 64);
  EXPECT_EQ(report.at("device"), "cpu");
  EXPECT_EQ(report.at("result_device"), "cpu");
  ASSERT_EQ(report.at("moves").size(), 3u);
  EXPECT_EQ(report.at("moves")[0], "T at slider position 4");  // from T = 3: + 1, + 4, + 7
  EXPECT_EQ(report.at("moves")[2], "T at slider position 10");
  EXPECT_NE(report.at("operator").get<std::string>().find("lot:r=4"), std::string::npos);
  const double latency = report.at("latency_ms").at("median"), compute = report.at("operator_compute_ms").at("median");
  EXPECT_GT(compute, 0);
  EXPECT_GE(latency, compute);  // the screen sees the result after the operator computed it
}

TEST(MeasureLatency, MovesTheFirstNumericParameterWhenTheFamilyHasNoT) {
  const CliRun run = measure({"--op", "esp"});
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out.substr(run.out.find('{')));
  EXPECT_EQ(report.at("moved"), "tau");
}

TEST(MeasureLatency, RefusesAFamilyWithoutANumericParameterAndReportsAFailedComputation) {
  const CliRun softmax = measure({"--op", "softmax"});
  EXPECT_EQ(softmax.status, 1);
  EXPECT_NE(softmax.err.find("softmax has none"), std::string::npos) << softmax.err;
  const CliRun diff = measure({"--op", "diff"});  // the cloud's head dimension is 3
  EXPECT_EQ(diff.status, 1);
  EXPECT_NE(diff.err.find("the computation failed: diff: the head dimension d = 3 is odd"), std::string::npos)
      << diff.err;
  const CliRun unknown = measure({"--op", "lot", "--param", "nope"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("--param nope"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace tl::testing
