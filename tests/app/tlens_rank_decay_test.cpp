// End-to-end: `tlens rank-decay paths|outputs` writes the JSON contract of docs/cli.md#rank-decay
// (names scripts rely on), the CSV, figures in GUI builds, and refuses bad requests with one error line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace tl::testing {
namespace {

using nlohmann::json;

constexpr const char* kStack = "stack:n=12,d=16,H=2,L=4";

json runJson(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> all = args;
  all.insert(all.end(), {"--json", dir + "/out.json"});
  const CliRun run = runTlens(all);
  EXPECT_EQ(run.status, 0) << run.err;
  return json::parse(readText(dir + "/out.json"));
}

TEST(TlensRankDecay, PathsJsonCarriesEverySampledValueAndItsSummary) {
  const std::string dir = scratchDir("rank_paths");
  const json j = runJson({"rank-decay", "paths", "--source", kStack, "--op", "softmax", "--op", "sinkhorn:T=50",
                          "--paths", "15", "--seeds", "3", "--seed", "4", "--csv", dir + "/out.csv"},
                         dir);
  EXPECT_EQ(j["config"], "san");
  EXPECT_EQ(j["order"], "literal");
  ASSERT_EQ(j["operators"].size(), 2u);
  EXPECT_EQ(j["operators"][1]["family"], "sinkhorn");
  const json& paths = j["operators"][0]["paths"];
  ASSERT_EQ(paths.size(), 4u);  // t = 1 … L
  for (size_t t = 0; t < paths.size(); ++t) {
    const json& d = paths[t];
    EXPECT_EQ(d["t"], int(t) + 1);
    ASSERT_EQ(d["values"].size(), 15u);
    std::vector<double> v = d["values"].get<std::vector<double>>();
    std::sort(v.begin(), v.end());
    EXPECT_DOUBLE_EQ(d["min"].get<double>(), v.front());
    EXPECT_DOUBLE_EQ(d["max"].get<double>(), v.back());
    EXPECT_DOUBLE_EQ(d["median"].get<double>(), v[7]);
    EXPECT_LE(d["q1"].get<double>(), d["median"].get<double>());
    EXPECT_LE(d["median"].get<double>(), d["q3"].get<double>());
  }
  EXPECT_FALSE(j["operators"][0].contains("outputs"));
  const std::string csv = readText(dir + "/out.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "op,t,median,q1,q3,whisker_low,whisker_high,min,max");
  EXPECT_EQ(lineCount(csv), 1 + 2 * 4);
}

TEST(TlensRankDecay, SameSeedSameCurvesAndTheOrderToggleChangesThem) {
  const std::string a = scratchDir("rank_seed_a"), b = scratchDir("rank_seed_b"), c = scratchDir("rank_seed_c");
  const std::vector<std::string> args{"rank-decay", "paths", "--source", kStack, "--op", "softmax", "--paths", "10",
                                      "--seeds", "2"};
  const json first = runJson(args, a), second = runJson(args, b);
  EXPECT_EQ(first["operators"], second["operators"]);
  std::vector<std::string> network = args;
  network.insert(network.end(), {"--order", "network"});
  const json reversed = runJson(network, c);
  EXPECT_EQ(reversed["order"], "network");
  EXPECT_EQ(reversed["operators"][0]["paths"][0], first["operators"][0]["paths"][0]);  // t = 1: one factor
  EXPECT_NE(reversed["operators"][0]["paths"][2]["values"], first["operators"][0]["paths"][2]["values"]);
}

TEST(TlensRankDecay, OutputsJsonHasLayersFromTheInputAndTheTheoryCurves) {
  const std::string dir = scratchDir("rank_outputs");
  const json j = runJson({"rank-decay", "outputs", "--source", kStack, "--op", "sinkhorn:T=200", "--seeds", "4",
                          "--csv", dir + "/out.csv"},
                         dir);
  const json& op = j["operators"][0];
  ASSERT_EQ(op["outputs"].size(), 5u);  // ℓ = 0 (input) … L
  for (size_t l = 0; l < 5; ++l) {
    const json& s = op["outputs"][l];
    EXPECT_EQ(s["layer"], int(l));
    for (const char* key : {"median", "mean", "std", "res_median"}) EXPECT_TRUE(s[key].is_number()) << key;
    EXPECT_GE(s["median"].get<double>(), 0);
    EXPECT_LE(s["median"].get<double>(), 1);
  }
  EXPECT_LT(op["outputs"][3]["median"].get<double>(), op["outputs"][0]["median"].get<double>());  // collapse
  std::vector<std::string> names;
  for (const json& t : op["theory"]) {
    names.push_back(t["name"]);
    EXPECT_TRUE(t["applies"].get<bool>()) << t.dump();  // converged Sinkhorn, pure SAN, no LayerNorm
    EXPECT_EQ(t["log10_res"].size(), 5u);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"printed", "linearised", "rigorous", "data"}));
  EXPECT_NE(op["theory"][0]["label"].get<std::string>().find("not guaranteed"), std::string::npos);
  ASSERT_EQ(op["attention"].size(), 4u);  // ℓ = 1 … L
  EXPECT_EQ(readText(dir + "/out.csv").substr(0, 38), "op,layer,median,mean,std,res_median\n\"s");
}

TEST(TlensRankDecay, TheoryIsGreyedWithItsReasonWhereItsAssumptionsFail) {
  const std::string dir = scratchDir("rank_grey");
  const json j = runJson({"rank-decay", "outputs", "--source", kStack, "--op", "softmax", "--config", "san+skip",
                          "--seeds", "2"},
                         dir);
  EXPECT_EQ(j["config"], "san+skip");
  for (const json& t : j["operators"][0]["theory"]) {
    EXPECT_FALSE(t["applies"].get<bool>()) << t.dump();
    EXPECT_FALSE(t["reason"].get<std::string>().empty());
  }
}

TEST(TlensRankDecay, RandomMatricesReproduceTheSkipMimic) {
  const std::string dir = scratchDir("rank_random");
  const json plain = runJson({"rank-decay", "paths", "--source", "random:n=10,s=1,L=3", "--op", "softmax", "--paths",
                              "20"},
                             dir);
  const json skip = runJson({"rank-decay", "paths", "--source", "random:n=10,s=1,L=3,skip=1", "--op", "softmax",
                             "--paths", "20"},
                            dir);
  EXPECT_EQ(plain["source"], "random:n=10,s=1,L=3,skip=false");
  EXPECT_GT(skip["operators"][0]["paths"][2]["median"].get<double>(),
            plain["operators"][0]["paths"][2]["median"].get<double>());
}

TEST(TlensRankDecay, BadRequestsGetOneErrorLine) {
  const std::string dir = scratchDir("rank_bad");
  const std::string out = dir + "/x.json";
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"rank-decay", "outputs", "--source", "random:n=5", "--op", "softmax",
                                              "--json", out}),
                                    2, {"random matrices have no layer outputs"}));
  EXPECT_TRUE(failsWithOneErrorLine(
      runTlens({"rank-decay", "paths", "--source", "stack:d=30,H=4", "--op", "softmax", "--json", out}), 2,
      {"multiple of H"}));
  EXPECT_TRUE(failsWithOneErrorLine(
      runTlens({"rank-decay", "paths", "--source", "cloud:n=4", "--op", "softmax", "--json", out}), 2, {"--source"}));
  EXPECT_TRUE(failsWithOneErrorLine(
      runTlens({"rank-decay", "paths", "--source", kStack, "--op", "softmax", "--config", "mlp", "--json", out}), 2,
      {"san+skip"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"rank-decay", "sideways", "--source", kStack, "--op", "softmax",
                                              "--json", out}),
                                    2, {"paths or outputs"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"rank-decay", "paths", "--source", kStack, "--json", out}), 2, {"--op"}));
  EXPECT_FALSE(fileExists(out));
}

#ifdef TL_TEST_GUI
TEST(TlensRankDecay, FiguresInEveryFormat) {
  const std::string dir = scratchDir("rank_figures");
  const CliRun run = runTlens({"rank-decay", "paths", "--source", kStack, "--op", "softmax", "--paths", "8", "--seeds",
                               "2", "--json", dir + "/p.json", "--png", dir + "/p.png", "--svg", dir + "/p.svg",
                               "--pdf", dir + "/p.pdf"},
                              "QT_QPA_PLATFORM=offscreen");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(readText(dir + "/p.png").substr(1, 3), "PNG");
  EXPECT_NE(readText(dir + "/p.svg").find("<svg"), std::string::npos);
  EXPECT_EQ(readText(dir + "/p.pdf").substr(0, 4), "%PDF");
}
#else
TEST(TlensRankDecay, FiguresNeedTheGuiBuild) {
  const std::string dir = scratchDir("rank_no_gui");
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"rank-decay", "paths", "--source", kStack, "--op", "softmax", "--json",
                                              dir + "/p.json", "--png", dir + "/p.png"}),
                                    1, {"TL_GUI"}));
}
#endif

}  // namespace
}  // namespace tl::testing
