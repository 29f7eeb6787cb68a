// `tlens asap-compile`, `tlens asap-eval` and `tlens eval --swap asap:compiled=DIR` end to end on the tiny
// Sinkhorn ViT of tests/fixtures/vit (sinkhorn:T=4,eps=0.5, 2 layers of 2 heads, 5 tokens) and a generated
// stand-in for Fashion-MNIST (docs/cli.md#asap-compile, #asap-eval).
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "support/two_class_fashion_mnist.h"

namespace tl::testing {
namespace {

const std::string kSinkhornVit = std::string(TL_FIXTURE_DIR) + "/vit/hf_sinkhorn_T4";
const std::string kSoftmaxVit = std::string(TL_FIXTURE_DIR) + "/vit/hf_softmax";

class TlensAsapModel : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = scratchDir("fashion_asap");
    test::writeTwoClassFashionMnist(data_);
  }
  CliRun tlens(const std::vector<std::string>& args) const { return runTlens(args, "TL_FASHION_MNIST_DIR=" + data_); }
  nlohmann::json compile(const std::string& out, const std::vector<std::string>& extra = {},
                         const std::string& slices = "6") const {
    std::vector<std::string> args = {"asap-compile", kSinkhornVit, "--calib", "fashion-mnist:train:0-63",
                                     "--slices", slices, "--out", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun run = tlens(args);
    EXPECT_EQ(run.status, 0) << run.err;
    return nlohmann::json::parse(readText(out + "/asap.json"));
  }
  std::string data_;
};

TEST_F(TlensAsapModel, CompileWritesTheStateAndItsManifest) {
  const std::string out = scratchDir("asap_compiled");
  const auto manifest = compile(out);
  EXPECT_TRUE(fileExists(out + "/asap.safetensors"));
  EXPECT_EQ(manifest.at("teacher"), "sinkhorn:T=4,eps=0.5,mask_mode=subsequence");
  EXPECT_EQ(manifest.at("closing"), "column");
  EXPECT_EQ(manifest.at("calibration"), "fashion-mnist:train:0-63");
  ASSERT_EQ(manifest.at("layers").size(), 2u);
  for (const auto& layer : manifest.at("layers")) {
    EXPECT_EQ(layer.at("L"), 6);
    EXPECT_EQ(layer.at("instances"), 64 * 2);  // images × heads
    EXPECT_EQ(layer.at("rows"), 64 * 2 * 5);
    EXPECT_DOUBLE_EQ(layer.at("lambda").get<double>(), 640 * 1e-4);
    EXPECT_GT(layer.at("r2").get<double>(), 0.0);
    EXPECT_LE(layer.at("r2").get<double>(), 1.0);
    EXPECT_GT(layer.at("fit_seconds").get<double>(), 0.0);
  }
}

TEST_F(TlensAsapModel, SequentialCalibrationSeesTheCompiledLayersUpstream) {
  const std::string parallel = scratchDir("asap_parallel"), sequential = scratchDir("asap_sequential");
  const auto a = compile(parallel), b = compile(sequential, {"--sequential"});
  EXPECT_TRUE(b.at("sequential").get<bool>());
  // Layer 0 sees the same inputs either way; layer 1 sees ASAP's layer 0 output when sequential.
  EXPECT_EQ(a.at("layers")[0].at("r2"), b.at("layers")[0].at("r2"));
  EXPECT_NE(a.at("layers")[1].at("r2"), b.at("layers")[1].at("r2"));
}

TEST_F(TlensAsapModel, SharedCoefficientsFitOneLayerForAll) {
  const std::string out = scratchDir("asap_shared");
  const auto manifest = compile(out, {"--shared"});
  EXPECT_TRUE(manifest.at("shared").get<bool>());
  const auto& layers = manifest.at("layers");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].at("seed"), layers[1].at("seed"));
  EXPECT_EQ(layers[0].at("rows"), 2 * 64 * 2 * 5);  // both layers' rows in one fit
  EXPECT_DOUBLE_EQ(layers[0].at("lambda").get<double>(), 1280 * 1e-4);
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"asap-compile", kSinkhornVit, "--shared", "--sequential", "--out", out}), 2,
                                    {"--shared"}));
}

// The feature families (docs/operators/asap.md#feature-families): the manifest records each; the default is
// the sliced potentials bit for bit; predict-both stores β_g and its key-side R², refuses KL, and asap-eval
// gives it one row (no closure, so its columns are not exact) beside each other family's ASAP-0 and ASAP rows.
TEST_F(TlensAsapModel, FeatureFamiliesCompileAndEvaluate) {
  const std::string plain = scratchDir("asap_default");
  compile(plain);
  std::vector<std::string> dirs;
  for (const std::string family : {"potentials", "raw", "rank-displacement", "predict-both"}) {
    SCOPED_TRACE(family);
    dirs.push_back(scratchDir("asap_" + family));
    const auto manifest = compile(dirs.back(), {"--features", family});
    EXPECT_EQ(manifest.at("features"), family);
    for (const auto& layer : manifest.at("layers")) EXPECT_EQ(layer.contains("key_r2"), family == "predict-both");
  }
  EXPECT_EQ(readText(plain + "/asap.safetensors"), readText(dirs[0] + "/asap.safetensors"));
  EXPECT_NE(readText(dirs[0] + "/asap.safetensors"), readText(dirs[1] + "/asap.safetensors"));
  EXPECT_TRUE(failsWithOneErrorLine(
      tlens({"asap-compile", kSinkhornVit, "--features", "predict-both", "--fit", "kl", "--out", dirs[3]}), 2,
      {"predict-both", "--fit kl"}));
  // The families combine with shared coefficients: one β (and β_g) for both layers.
  const auto shared = compile(scratchDir("asap_shared_both"), {"--shared", "--features", "predict-both"});
  EXPECT_EQ(shared.at("features"), "predict-both");
  EXPECT_TRUE(shared.at("shared").get<bool>());
  EXPECT_EQ(shared.at("layers")[0].at("key_r2"), shared.at("layers")[1].at("key_r2"));

  const std::string json = scratchDir("asap_eval_families") + "/table.json";
  std::vector<std::string> args = {"asap-eval", kSinkhornVit, "--limit", "8", "--json", json};
  for (const auto& dir : dirs) args.insert(args.end(), {"--compiled", dir});
  const CliRun run = tlens(args);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(readText(json));
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : report.at("rows")) rows[row.at("name")] = row;
  for (const char* name : {"ASAP (ls)", "ASAP (ls, raw)", "ASAP-0 (ls, rank-displacement)", "ASAP (ls, predict-both)"})
    EXPECT_TRUE(rows.count(name)) << name << " in " << report.at("rows").dump();
  EXPECT_FALSE(rows.count("ASAP-0 (ls, predict-both)"));
  EXPECT_LT(rows["ASAP (ls, raw)"].at("overall").at("col_error_max").get<double>(), 1e-12);
  EXPECT_GT(rows["ASAP (ls, predict-both)"].at("overall").at("col_error_max").get<double>(), 1e-6);
  EXPECT_NE(rows["ASAP (ls, predict-both)"].at("operator").get<std::string>().find("features=predict-both"),
            std::string::npos);
}

TEST_F(TlensAsapModel, EvalSwapsTheCompiledLayersIn) {
  const std::string out = scratchDir("asap_for_eval");
  compile(out);
  const std::string json = scratchDir("asap_eval_json") + "/eval.json";
  const CliRun run = tlens({"eval", kSinkhornVit, "--swap", "asap:compiled=" + out + ",eps=0.5", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_EQ(report.at("swapped_layers").size(), 2u);
  for (const auto& layer : report.at("layers")) EXPECT_GT(layer.at("attention_distance").get<double>(), 0.0);
  // The compiled layers were fitted at eps = 0.5: another eps is refused with the reason.
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"eval", kSinkhornVit, "--swap", "asap:compiled=" + out}), 2, {"eps=0.5"}));
}

TEST_F(TlensAsapModel, AsapEvalTabulatesEveryRow) {
  const std::string ls = scratchDir("asap_ls"), kl = scratchDir("asap_kl");
  compile(ls);
  compile(kl, {"--fit", "kl"});
  const std::string json = scratchDir("asap_eval_table") + "/table.json";
  const CliRun run = tlens({"asap-eval", kSinkhornVit, "--compiled", ls, "--compiled", kl, "--limit", "16", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("ASAP-0 (kl)"), std::string::npos) << run.out;
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_EQ(report.at("images"), 16);
  std::vector<std::string> names;
  for (const auto& row : report.at("rows")) names.push_back(row.at("name"));
  EXPECT_EQ(names, (std::vector<std::string>{"sinkhorn T_b=1", "sinkhorn T_b=3", "ASAP-0 (ls)", "ASAP (ls)", "ASAP-0 (kl)",
                                             "ASAP (kl)", "beta=0 ASAP-0", "beta=0 ASAP", "teacher"}));
  const auto& teacher = report.at("rows").back();
  EXPECT_EQ(teacher.at("overall").at("attention_error").get<double>(), 0.0);
  EXPECT_EQ(teacher.at("agreement").get<double>(), 1.0);
  EXPECT_NEAR(teacher.at("accuracy").get<double>(), report.at("teacher_model_accuracy").get<double>(), 1e-12);
  for (const auto& row : report.at("rows")) {
    ASSERT_EQ(row.at("layers").size(), 2u);
    const auto& o = row.at("overall");
    // The key-side closure makes every ASAP and column-ending plan's columns exact.
    if (row.at("name").get<std::string>().find("ASAP") != std::string::npos) {
      EXPECT_LT(o.at("col_error_max").get<double>(), 1e-12);
    }
    EXPECT_GT(o.at("ms").get<double>(), 0.0);
  }
  // T_b = 1 is a row softmax: exact rows.
  EXPECT_LT(report.at("rows")[0].at("overall").at("row_error_max").get<double>(), 1e-12);
}

// A slice-count ablation: compiled models with the same fit kind are told apart by L, and each fitted row carries
// its calibration R² (the manifest's, per layer and their mean). The numbers do not depend on the thread count.
TEST_F(TlensAsapModel, AsapEvalComparesSliceCountsWithTheirFitR2) {
  const std::string small = scratchDir("asap_L3"), large = scratchDir("asap_L8");
  const auto smallManifest = compile(small, {}, "3");
  const auto largeManifest = compile(large, {}, "8");
  auto table = [&](const std::string& threads) {
    const std::string json = scratchDir("asap_eval_ablation") + "/table.json";
    const CliRun run = runTlens({"asap-eval", kSinkhornVit, "--compiled", small, "--compiled", large, "--limit", "12",
                                 "--json", json},
                                "TL_FASHION_MNIST_DIR=" + data_ + " OMP_NUM_THREADS=" + threads);
    EXPECT_EQ(run.status, 0) << run.err;
    return nlohmann::json::parse(readText(json));
  };
  const auto report = table("2");
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : report.at("rows")) rows[row.at("name")] = row;
  ASSERT_TRUE(rows.count("ASAP (ls, L=3)") && rows.count("ASAP (ls, L=8)")) << report.at("rows").dump();
  for (const auto& [name, manifest] : {std::pair{"ASAP (ls, L=3)", smallManifest}, {"ASAP (ls, L=8)", largeManifest}}) {
    const auto& row = rows.at(name);
    double mean = 0;
    for (size_t l = 0; l < 2; ++l) {
      EXPECT_EQ(row.at("layers")[l].at("fit_r2"), manifest.at("layers")[l].at("r2")) << name;
      mean += manifest.at("layers")[l].at("r2").get<double>() / 2;
    }
    EXPECT_NEAR(row.at("overall").at("fit_r2").get<double>(), mean, 1e-15) << name;
  }
  EXPECT_FALSE(rows.at("teacher").at("overall").contains("fit_r2"));
  // One thread gives the same table but for the timings.
  const auto serial = table("1");
  for (size_t r = 0; r < report.at("rows").size(); ++r) {
    const auto& a = report.at("rows")[r];
    const auto& b = serial.at("rows")[r];
    EXPECT_EQ(a.at("accuracy"), b.at("accuracy"));
    EXPECT_EQ(a.at("agreement"), b.at("agreement"));
    for (const char* key : {"output_rmse", "attention_error", "row_error_max", "col_error_mean"})
      EXPECT_EQ(a.at("overall").at(key), b.at("overall").at(key)) << a.at("name") << " " << key;
  }
}

TEST_F(TlensAsapModel, ANonSinkhornCheckpointHasNothingToCompile) {
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"asap-compile", kSoftmaxVit, "--calib", "fashion-mnist:train:0-3", "--out",
                                           scratchDir("asap_softmax")}),
                                    2, {"Sinkhorn teacher"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"asap-compile", kSinkhornVit, "--calib", "train:0-3", "--out",
                                           scratchDir("asap_bad_calib")}),
                                    2, {"--calib"}));
}

}  // namespace
}  // namespace tl::testing
