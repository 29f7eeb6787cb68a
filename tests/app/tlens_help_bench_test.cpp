// End-to-end: help texts list every command, option and operator parameter; `tlens bench` reports C++
// times with or without the PyTorch reference.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "ops/registry.h"

namespace tl::testing {
namespace {

void expectMentions(const std::string& text, const std::vector<std::string>& words) {
  for (const auto& w : words) EXPECT_NE(text.find(w), std::string::npos) << "missing '" << w << "' in\n" << text;
}

// scripts/setup installs python3-torch, so a reference that did not run is a broken set-up, not a reason to
// skip the side-by-side checks.
[[nodiscard]] ::testing::AssertionResult referenceRan(const nlohmann::json& report) {
  if (report["reference"]["available"].get<bool>()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the PyTorch reference did not run ("
                                       << report["reference"]["reason"].get<std::string>()
                                       << "); run scripts/setup, which installs python3-torch";
}

TEST(TlensHelp, MainHelpListsCommandsOperatorsAndSources) {
  const CliRun run = runTlens({"--help"});
  ASSERT_EQ(run.status, 0) << run.err;
  expectMentions(run.out, {"plan", "render", "bench", "softmax", "sinkhorn", "T (", "eps (", "mask_mode",
                           "synthetic:gaussian", "seed", "exit status"});
  for (const auto& family : OperatorRegistry::builtin().families())
    EXPECT_TRUE(familyListed(family.name)) << "no line for '" << family.name << "' in\n" << run.out;
}

TEST(TlensHelp, NoArgumentsPrintsUsageAndFails) {
  const CliRun run = runTlens({});
  EXPECT_EQ(run.status, 2);
  expectMentions(run.err, {"usage: tlens"});
}

TEST(TlensHelp, PlanHelpListsEveryOption) {
  const CliRun run = runTlens({"plan", "--help"});
  ASSERT_EQ(run.status, 0) << run.err;
  expectMentions(run.out, {"--q", "--k", "--v", "--mask", "--source", "--op", "--precision", "--out", "--json",
                           "keep-queries"});
}

TEST(TlensHelp, BenchAndRenderHelpListTheirOptions) {
  const CliRun bench = runTlens({"bench", "--help"});
  ASSERT_EQ(bench.status, 0) << bench.err;
  expectMentions(bench.out, {"--op", "--n", "--d", "--repeats", "--precision", "--threads", "--floor", "--json"});
  const CliRun render = runTlens({"render", "--help"});
  ASSERT_EQ(render.status, 0) << render.err;
  expectMentions(render.out, {"SESSION.json", "--out"});
}

TEST(TlensBench, ReportsCppTimesAndTheReferenceSideBySide) {
  const std::string json = scratchDir("bench") + "/bench.json";
  const CliRun run = runTlens({"bench", "--op", "sinkhorn:T=3", "--op", "softmax", "--n", "8,16", "--d", "4",
                               "--repeats", "2", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(readText(json));
  ASSERT_EQ(report["results"].size(), 4u);
  for (const auto& row : report["results"]) {
    EXPECT_GT(row["cpp_median_seconds"].get<double>(), 0.0);
    EXPECT_EQ(row["cpp_seconds"].size(), 2u);
  }
  ASSERT_TRUE(referenceRan(report));
  for (const auto& row : report["results"]) {
    EXPECT_GT(row["reference_median_seconds"].get<double>(), 0.0) << row.dump();
    EXPECT_GT(row["ratio_reference_over_cpp"].get<double>(), 0.0);
  }
  expectMentions(run.out, {"torch/C++", "sinkhorn:T=3", "softmax"});
}

// ASAP and LOT need files: the bench generates them and hands the same paths to the reference.
TEST(TlensBench, GeneratedFilesAndLazyPathsRunOnBothSides) {
  const std::string json = scratchDir("bench-lazy") + "/bench.json";
  const std::string denseJson = scratchDir("bench-dense") + "/bench.json";
  const CliRun dense = runTlens(
      {"bench", "--op", "asap", "--op", "lot:r=2", "--n", "8", "--d", "4", "--repeats", "1", "--json", denseJson});
  ASSERT_EQ(dense.status, 0) << dense.err;
  const auto denseReport = nlohmann::json::parse(readText(denseJson));
  ASSERT_TRUE(referenceRan(denseReport));
  for (const auto& row : denseReport["results"]) {
    EXPECT_TRUE(row.contains("reference_median_seconds")) << row.dump();
    EXPECT_FALSE(row.contains("reference_error")) << row.dump();
  }
  const CliRun run = runTlens({"bench", "--lazy", "--op", "banded:W=2", "--op", "lot:r=2", "--op", "esp", "--n", "8,16",
                               "--d", "4", "--repeats", "1", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_TRUE(report["lazy"].get<bool>());
  EXPECT_FALSE(report["machine"]["cpu_model"].get<std::string>().empty());
  ASSERT_EQ(report["results"].size(), 6u);
  EXPECT_NE(report["results"][2]["resolved"].get<std::string>().find("pivot_init=file,pivots="), std::string::npos);
  ASSERT_TRUE(referenceRan(report));
  for (const auto& row : report["results"]) EXPECT_TRUE(row.contains("reference_median_seconds")) << row.dump();
  EXPECT_NE(runTlens({"bench", "--lazy", "--op", "softmax", "--n", "8"}).status, 0);
}

// A row the reference cannot time (its ASAP formulation has only the sliced-potential features) says why,
// in the table and in the JSON, instead of a bare "-".
TEST(TlensBench, ARowTheReferenceCannotTimeSaysWhy) {
  const std::string json = scratchDir("bench-row-error") + "/bench.json";
  const CliRun run = runTlens({"bench", "--op", "asap:features=raw", "--n", "8", "--d", "4", "--repeats", "1",
                               "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(readText(json));
  ASSERT_TRUE(referenceRan(report));
  const auto& row = report["results"][0];
  EXPECT_FALSE(row.contains("reference_median_seconds")) << row.dump();
  ASSERT_TRUE(row.contains("reference_error")) << row.dump();
  EXPECT_NE(row["reference_error"].get<std::string>().find("sliced-potential"), std::string::npos) << row.dump();
  expectMentions(run.out, {"reference could not time asap:features=raw", "sliced-potential"});
}

// --floor: the CPU's exp, streaming and multiply-add throughput in the JSON, at the start and around each row's
// timing, and each row's time over the floor of its least work (least_work.h) at the faster of the two floors
// around it, at the default float64:
// - Sinkhorn T = 3: ⌊T/2⌋ + 2 = 3 exp passes over n × n (its row half-steps, the last for the open marginal, and
//   the plan) and its two products (QKᵀ and A·V, n·n·d multiply-adds each);
// - ASAP-0: 2 passes (the key-side closure and the plan) and the same products;
// - ESP (hard, axis slicer, L = d): no exponential of n × n, the dense plan streamed once, and one matched pair's
//   cost and output gather per query and slice (2·L·n·d multiply-adds);
// - banded W = 2: Sinkhorn's count on the band's 16·5 − 2·3 = 74 entries for 15 + 2 full steps, its scores and
//   output on the band, and the dense plan streamed once;
// - SoftSort ESP: no count.
TEST(TlensBench, FloorRecordsTheMachineAndEachOperatorsMultipleOfIt) {
  const std::string json = scratchDir("bench-floor") + "/bench.json";
  const CliRun run = runTlens({"bench", "--floor", "--threads", "1", "--op", "sinkhorn:T=3", "--op", "asap:variant=asap0",
                               "--op", "esp", "--op", "banded:W=2", "--op", "esp:sort=soft", "--n", "16", "--d", "4",
                               "--repeats", "1", "--json", json},
                              "TL_PYTHON=/bin/false");
  ASSERT_EQ(run.status, 0) << run.err;
  expectMentions(run.out, {"floor, 1 thread(s)", "x floor", "x work", "multiply-add peak"});
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_EQ(report["cpp_threads"].get<int>(), 1);
  EXPECT_FALSE(report["machine"]["build_simd"].get<std::string>().empty());
  ASSERT_EQ(report["floor"].size(), 1u);  // one thread asked: no second, all-thread floor
  const char* throughputs[] = {"exp_per_second_f32", "exp_per_second_f64", "stream_gb_per_second",
                               "multiply_add_gflops_f32", "multiply_add_gflops_f64"};
  const auto& startFloor = report["floor"][0];
  EXPECT_EQ(startFloor["threads"].get<int>(), 1);
  for (const char* key : throughputs) EXPECT_GT(startFloor[key].get<double>(), 0.0) << key;
  EXPECT_NEAR(startFloor["exp_ns_f64"].get<double>() * startFloor["exp_per_second_f64"].get<double>(), 1e9, 1e-3);
  const auto& results = report["results"];
  ASSERT_EQ(results.size(), 5u);
  const double entries = 16 * 16, denseProducts = 2.0 * 16 * 16 * 4;
  const struct {
    const char* op;
    double exponentials, streamed, multiplyAdds;
  } expected[] = {{"sinkhorn:T=3", 3 * entries, 0, denseProducts},
                  {"asap:variant=asap0", 2 * entries, 0, denseProducts},
                  {"esp", 0, entries, 2.0 * 4 * 16 * 4},
                  {"banded:W=2", (15 + 2 + 2) * 74.0, entries, 2.0 * 74 * 4}};
  for (size_t i = 0; i < 4; ++i) {
    const auto& row = results[i];
    SCOPED_TRACE(expected[i].op);
    ASSERT_EQ(row["op"].get<std::string>(), expected[i].op);
    // The row's floor: of the two measured around its timing, the larger of each throughput.
    const auto& floor = row["floor"];
    ASSERT_EQ(row["floor_measured"].size(), 2u);
    EXPECT_EQ(floor["threads"].get<int>(), 1);
    for (const char* key : throughputs) {
      const double before = row["floor_measured"][0][key].get<double>();
      const double after = row["floor_measured"][1][key].get<double>();
      EXPECT_GT(std::min(before, after), 0.0) << key;
      EXPECT_EQ(floor[key].get<double>(), std::max(before, after)) << key;
    }
    const double expSeconds = 1 / floor["exp_per_second_f64"].get<double>();
    const double streamSeconds = 8 / (floor["stream_gb_per_second"].get<double>() * 1e9);
    const double multiplyAddSeconds = 2 / (floor["multiply_add_gflops_f64"].get<double>() * 1e9);
    // The floor of `exponentials` and `streamed` entries: the exp or the memory traffic, whichever takes longer.
    auto floorOf = [&](double exponentials, double streamed) {
      return std::max(exponentials * expSeconds, (exponentials + streamed) * streamSeconds);
    };
    const double cpp = row["cpp_median_seconds"].get<double>();
    EXPECT_NEAR(cpp / row["exp_pass_equivalents"].get<double>(), floorOf(entries, 0), 1e-9 * floorOf(entries, 0));
    const double floorSeconds = floorOf(expected[i].exponentials, expected[i].streamed);
    EXPECT_NEAR(row["floor_seconds"].get<double>(), floorSeconds, 1e-9 * floorSeconds);
    EXPECT_NEAR(row["ratio_cpp_over_floor"].get<double>(), cpp / row["floor_seconds"].get<double>(), 1e-12);
    const double workSeconds = floorSeconds + expected[i].multiplyAdds * multiplyAddSeconds;
    EXPECT_NEAR(row["work_floor_seconds"].get<double>(), workSeconds, 1e-9 * workSeconds);
    EXPECT_NEAR(row["ratio_cpp_over_work_floor"].get<double>(), cpp / row["work_floor_seconds"].get<double>(), 1e-12);
  }
  const auto& softSort = results[4];
  EXPECT_GT(softSort["exp_pass_equivalents"].get<double>(), 0.0);
  EXPECT_FALSE(softSort.contains("floor_seconds"));
  EXPECT_FALSE(softSort.contains("work_floor_seconds"));
  // The floor alone needs no operator; a thread count must be positive.
  EXPECT_EQ(runTlens({"bench", "--floor", "--threads", "1", "--repeats", "1"}).status, 0);
  const CliRun zero = runTlens({"bench", "--floor", "--threads", "0"});
  EXPECT_EQ(zero.status, 2);
  expectMentions(zero.err, {"threads"});
}

TEST(TlensBench, WithoutTheReferenceStillReportsCppTimes) {
  const std::string json = scratchDir("bench-noref") + "/bench.json";
  const CliRun run =
      runTlens({"bench", "--op", "softmax", "--n", "8", "--repeats", "1", "--json", json}, "TL_PYTHON=/bin/false");
  ASSERT_EQ(run.status, 0) << run.err;
  expectMentions(run.out, {"reference: not run", "softmax"});
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_FALSE(report["reference"]["available"].get<bool>());
  ASSERT_EQ(report["results"].size(), 1u);
  EXPECT_GT(report["results"][0]["cpp_median_seconds"].get<double>(), 0.0);
  EXPECT_FALSE(report["results"][0].contains("reference_median_seconds"));
}

TEST(TlensBench, ReferenceDirOverrideIsHonoured) {
  const std::string json = scratchDir("bench-refdir") + "/bench.json";
  const CliRun run = runTlens({"bench", "--op", "softmax", "--n", "4", "--repeats", "1", "--json", json},
                              "TL_REFERENCE_DIR=/nonexistent-reference");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_FALSE(report["reference"]["available"].get<bool>());
  EXPECT_NE(report["reference"]["reason"].get<std::string>().find("/nonexistent-reference"), std::string::npos);
}

}  // namespace
}  // namespace tl::testing
