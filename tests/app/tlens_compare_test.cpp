// End-to-end: `tlens compare` prints one table row per operator and writes the same numbers as JSON and CSV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "io/npy.h"

namespace tl::testing {
namespace {

constexpr const char* kSource = "synthetic:gaussian:n=16,d=4,seed=2";  // draws V too: outputs are compared
constexpr const char* kOps = "softmax; sinkhorn:T=20;sinkhorn:T=1";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The table rows: lines that start with the operator's 1-based position.
std::vector<std::string> tableRows(const std::string& out) {
  std::vector<std::string> rows;
  for (const auto& line : lines(out))
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])) &&
        line.rfind(std::to_string(rows.size() + 1) + " ", 0) == 0)
      rows.push_back(line);
  return rows;
}

// CSV cells of one line, honouring "..." quoting.
std::vector<std::string> csvCells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

TEST(TlensCompare, OneRowPerOperatorAndMatchingJsonAndCsv) {
  const std::string dir = scratchDir("compare");
  const CliRun run =
      runTlens({"compare", "--source", kSource, "--ops", kOps, "--json", dir + "/c.json", "--csv", dir + "/c.csv"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(run.err.empty()) << run.err;

  const auto rows = tableRows(run.out);
  ASSERT_EQ(rows.size(), 3u) << run.out;
  EXPECT_NE(rows[0].find("softmax"), std::string::npos);
  EXPECT_NE(rows[1].find("sinkhorn:T=20"), std::string::npos);
  EXPECT_NE(rows[0].find("ref"), std::string::npos);  // the first operator is the default reference
  for (const std::string header : {"operator", "time", "row err", "col err", "entropy", "max col", "Gini", "eff rank",
                                   "num rank", "rel Frob", "max abs", "row KL", "out diff"})
    EXPECT_NE(run.out.find(header), std::string::npos) << header;

  const auto json = nlohmann::json::parse(readText(dir + "/c.json"));
  EXPECT_EQ(json["reference"]["index"], 1);
  ASSERT_EQ(json["operators"].size(), 3u);
  for (const auto& op : json["operators"]) {
    for (const std::string key : {"index", "label", "operator", "family", "seconds", "marginal_errors", "mass_mismatch",
                                  "row_entropy", "column_mass", "rank", "distance_to_reference"})
      EXPECT_TRUE(op.contains(key)) << key;
    for (const std::string key : {"relative_frobenius", "max_abs", "mean_row_kl", "output_difference"})
      EXPECT_TRUE(op["distance_to_reference"][key].is_number()) << key;
  }
  const auto& self = json["operators"][0]["distance_to_reference"];
  EXPECT_EQ(self["relative_frobenius"], 0.0);
  EXPECT_EQ(self["output_difference"], 0.0);
  // sinkhorn:T=1 is the row softmax (docs/conventions.md#budget): zero distance to the reference.
  EXPECT_LT(json["operators"][2]["distance_to_reference"]["max_abs"].get<double>(), 1e-15);
  EXPECT_GT(json["operators"][1]["distance_to_reference"]["mean_row_kl"].get<double>(), 0.0);
  EXPECT_LT(json["operators"][1]["column_mass"]["gini"].get<double>(),
            json["operators"][0]["column_mass"]["gini"].get<double>());

  const auto csv = lines(readText(dir + "/c.csv"));
  ASSERT_EQ(csv.size(), 4u);
  const auto header = csvCells(csv[0]);
  for (const std::string key : {"label", "operator", "gini", "effective_rank", "numerical_rank", "relative_frobenius",
                                "mean_row_kl", "output_difference", "mass_mismatch"})
    EXPECT_NE(std::find(header.begin(), header.end(), key), header.end()) << key;
  for (size_t i = 1; i < csv.size(); ++i) EXPECT_EQ(csvCells(csv[i]).size(), header.size()) << csv[i];
  const size_t gini = size_t(std::find(header.begin(), header.end(), "gini") - header.begin());
  EXPECT_EQ(std::stod(csvCells(csv[2])[gini]), json["operators"][1]["column_mass"]["gini"].get<double>());
  EXPECT_EQ(csvCells(csv[2])[2], json["operators"][1]["operator"]);  // resolved text, commas quoted
}

TEST(TlensCompare, ReferenceByFamilyOrPosition) {
  const std::string dir = scratchDir("compare-ref");
  for (const std::string reference : {"2", "softmax"}) {
    const CliRun run = runTlens({"compare", "--source", kSource, "--ops", "sinkhorn:T=5;softmax", "--reference",
                                 reference, "--json", dir + "/c.json"});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto json = nlohmann::json::parse(readText(dir + "/c.json"));
    EXPECT_EQ(json["reference"]["index"], 2) << reference;
    EXPECT_EQ(json["operators"][1]["distance_to_reference"]["relative_frobenius"], 0.0);
    EXPECT_NE(tableRows(run.out)[1].find("ref"), std::string::npos);
  }
}

TEST(TlensCompare, WithoutValuesThereIsNoOutputDifference) {
  const std::string dir = scratchDir("compare-noV");
  writeNpy(dir + "/q.npy", MatD::Identity(5, 3).eval());
  writeNpy(dir + "/k.npy", MatD::Ones(5, 3).eval());
  const CliRun run = runTlens({"compare", "--q", dir + "/q.npy", "--k", dir + "/k.npy", "--ops", "softmax;sinkhorn",
                               "--json", dir + "/c.json"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out.find("out diff"), std::string::npos);
  EXPECT_TRUE(
      nlohmann::json::parse(readText(dir + "/c.json"))["operators"][1]["distance_to_reference"]["output_difference"]
          .is_null());
}

TEST(TlensCompare, UsageErrors) {
  const std::vector<std::string> base = {"compare", "--source", kSource};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return runTlens(extra);
  };
  EXPECT_TRUE(failsWithOneErrorLine(with({"--ops", "softmax;;sinkhorn"}), 2, {"--ops", "operator 2"}));
  EXPECT_TRUE(
      failsWithOneErrorLine(with({"--ops", "softmax;sinkhorn", "--reference", "3"}), 2, {"--reference", "1..2"}));
  EXPECT_TRUE(
      failsWithOneErrorLine(with({"--ops", "softmax;sinkhorn", "--reference", "esp"}), 2, {"--reference", "esp"}));
  EXPECT_TRUE(failsWithOneErrorLine(with({"--ops", "sinkhorn:T=2;sinkhorn", "--reference", "sinkhorn"}), 2,
                                    {"--reference", "2 times"}));
  EXPECT_TRUE(failsWithOneErrorLine(with({"--ops", "softmax;sinkhorn:T=0"}), 2, {"'T'"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"compare", "--ops", "softmax"}), 2, {"--q"}));
  EXPECT_TRUE(failsWithOneErrorLine(with({}), 2, {"--ops"}));
}

}  // namespace
}  // namespace tl::testing
