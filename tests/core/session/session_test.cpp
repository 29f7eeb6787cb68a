// Session JSON: round trips, relative paths, versioning, corrupt files, atomic save.
#include "session/session.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using nlohmann::json;
using test::throwsWith;

Session richSession() {
  Session s;
  s.source = SourceSpec::parse("synthetic:gaussian:n=32,d=8,seed=4");
  s.precision = Precision::F32;
  s.operators = {OperatorRegistry::builtin().parse("sinkhorn:T=7,eps=0.3"),
                 OperatorRegistry::builtin().parse("softmax:mask_mode=keep-queries")};
  s.views = {"plan", "convergence"};
  s.viewState = json{{"plan", {{"colormap", "viridis"}, {"zoom", {0, 1, 2.5}}, {"log", true}}},
                     {"convergence", {{"series", {"row", "col"}}}}};
  s.exportSettings.formats = {"png", "pdf"};
  s.exportSettings.width = 800;
  s.exportSettings.height = 600;
  s.exportSettings.scale = 3.0;
  return s;
}

// The top-level entries that carry the format name and version (whatever the keys are called).
std::string formatKey(const json& j) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it->is_string() && it->get<std::string>() == Session::kFormatName) return it.key();
  return {};
}
std::string versionKey(const json& j) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (test::lower(it.key()).find("version") != std::string::npos && it->is_number_integer()) return it.key();
  return {};
}

TEST(Session, PrecisionNames) {
  EXPECT_EQ(parsePrecision("f64"), Precision::F64);
  EXPECT_EQ(parsePrecision("f32"), Precision::F32);
  EXPECT_EQ(parsePrecision(precisionName(Precision::F32)), Precision::F32);
  EXPECT_EQ(parsePrecision(precisionName(Precision::F64)), Precision::F64);
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)parsePrecision("f16"); }, {"f16"}));
}

TEST(Session, JsonRoundTrip) {
  const Session s = richSession();
  const json j1 = s.toJson();
  const Session s2 = Session::fromJson(j1);
  EXPECT_EQ(s2.toJson(), j1) << j1.dump(2) << "\nvs\n" << s2.toJson().dump(2);
  EXPECT_EQ(s2.precision, Precision::F32);
  ASSERT_EQ(s2.operators.size(), 2u);
  EXPECT_EQ(s2.operators[0].family, "sinkhorn");
  EXPECT_EQ(s2.operators[0].params, s.operators[0].params);
  EXPECT_EQ(s2.operators[1].params, s.operators[1].params);
  EXPECT_EQ(s2.views, s.views);
  EXPECT_EQ(s2.viewState, s.viewState);
  EXPECT_EQ(s2.exportSettings.formats, s.exportSettings.formats);
  EXPECT_EQ(s2.exportSettings.width, 800);
  EXPECT_EQ(s2.exportSettings.height, 600);
  EXPECT_EQ(s2.exportSettings.scale, 3.0);
  EXPECT_EQ(s2.source.toString(), s.source.toString());
  // The JSON names its format and version.
  EXPECT_FALSE(formatKey(j1).empty()) << j1.dump(2);
  ASSERT_FALSE(versionKey(j1).empty()) << j1.dump(2);
  EXPECT_EQ(j1[versionKey(j1)].get<int>(), Session::kFormatVersion);
}

// A default Session's SourceSpec carries unresolved (empty) generator params, so its first load fills the
// defaults; from then on the JSON is a fixed point.
TEST(Session, ListedSwapLayersRoundTripAndAreChecked) {
  Session s;
  s.operators = {OperatorRegistry::builtin().parse("softmax")};
  s.swapScope = SwapScope::Listed;
  s.swapLayers = {0, 2};
  const json j = s.toJson();
  EXPECT_EQ(j.at("swap"), "listed");
  EXPECT_EQ(j.at("swap_layers"), json({0, 2}));
  EXPECT_EQ(Session::fromJson(j).swapLayers, (std::vector<int>{0, 2}));
  s.swapScope = SwapScope::Layer;
  EXPECT_FALSE(s.toJson().contains("swap_layers")) << "written only for the listed scope";

  json unsorted = j;
  unsorted["swap_layers"] = {2, 0};
  EXPECT_EQ(Session::fromJson(unsorted).swapLayers, (std::vector<int>{0, 2}));
  for (const json& bad : {json({0, 0}), json({-1}), json("0,2"), json({1.5})}) {
    json k = j;
    k["swap_layers"] = bad;
    EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)Session::fromJson(k); }, {"swap_layers"})) << bad.dump();
  }
  json missing = j;
  missing.erase("swap_layers");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)Session::fromJson(missing); }, {"listed", "swap_layers"}));
}

TEST(Session, DefaultSessionRoundTrips) {
  Session s;  // defaults everywhere, plus the one operator a session needs
  s.operators = {OperatorRegistry::builtin().parse("softmax")};
  const json once = Session::fromJson(s.toJson()).toJson();
  EXPECT_EQ(Session::fromJson(once).toJson(), once);
  EXPECT_EQ(Session::fromJson(once).source.toString(), SourceSpec::parse(s.source.toString()).toString());
}

TEST(Session, FilesSourcePathsResolveAgainstBaseDir) {
  Session s;
  s.source = SourceSpec::parse("files:q=inputs/Q.npy,k=inputs/K.npy,mask=M.npy");
  s.operators = {OperatorRegistry::builtin().parse("softmax")};
  const json j = s.toJson();
  const Session r = Session::fromJson(j, "/data/project");
  namespace fs = std::filesystem;
  EXPECT_EQ(fs::path(r.source.q).lexically_normal(), fs::path("/data/project/inputs/Q.npy"));
  EXPECT_EQ(fs::path(r.source.k).lexically_normal(), fs::path("/data/project/inputs/K.npy"));
  EXPECT_EQ(fs::path(r.source.mask).lexically_normal(), fs::path("/data/project/M.npy"));
  EXPECT_TRUE(r.source.v.empty());
  // Absolute paths are left alone.
  s.source = SourceSpec::parse("files:q=/abs/Q.npy,k=/abs/K.npy");
  const Session a = Session::fromJson(s.toJson(), "/data/project");
  EXPECT_EQ(fs::path(a.source.q).lexically_normal(), fs::path("/abs/Q.npy"));
  EXPECT_EQ(Session::fromJson(s.toJson()).toJson(), s.toJson());
}

// The rank-decay model source names its checkpoint as the main source does: relative to the session's folder.
TEST(Session, RankDecayCheckpointResolvesAgainstTheSessionFolder) {
  namespace fs = std::filesystem;
  auto checkpointOf = [](const Session& s) {
    return getString(rankdecay::parseRankDecaySource(s.rankDecay.source).params, "checkpoint");
  };
  Session s = richSession();
  s.rankDecay.source = "model:checkpoint=models/vit,images=fashion-mnist:test:0-9";
  const Session r = Session::fromJson(s.toJson(), "/data/project");
  EXPECT_EQ(fs::path(checkpointOf(r)), fs::path("/data/project/models/vit"));
  EXPECT_EQ(getString(rankdecay::parseRankDecaySource(r.rankDecay.source).params, "images"), "fashion-mnist:test:0-9");
  s.rankDecay.source = "model:checkpoint=/abs/vit";  // absolute: left alone
  EXPECT_EQ(checkpointOf(Session::fromJson(s.toJson(), "/data/project")), "/abs/vit");
  s.rankDecay.source = "stack:n=16,d=32,H=2,L=3";  // other sources keep their text
  EXPECT_EQ(Session::fromJson(s.toJson(), "/data/project").rankDecay.source, s.rankDecay.source);

  // Saved next to the checkpoint folder, the file holds the relative path and loads back to the same folder.
  test::TempDir dir;
  fs::create_directories(dir.path() / "models" / "vit");
  s.rankDecay.source = "model:checkpoint=" + dir.file("models/vit");
  s.save(dir.file("s.json"));
  const json onDisk = json::parse(test::readBytes(dir.file("s.json")));
  EXPECT_EQ(getString(rankdecay::parseRankDecaySource(onDisk["rank_decay"]["source"]).params, "checkpoint"),
            "models/vit");
  EXPECT_TRUE(fs::equivalent(checkpointOf(Session::load(dir.file("s.json"))), dir.file("models/vit")));
}

// A session saved next to its inputs loads back pointing at the same files.
TEST(Session, SaveLoadWithFilesSource) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "inputs");
  test::writeBytes(dir.file("inputs/Q.npy"), "q");
  test::writeBytes(dir.file("inputs/K.npy"), "k");
  Session s = richSession();
  s.source = SourceSpec::parse("files:q=" + dir.file("inputs/Q.npy") + ",k=" + dir.file("inputs/K.npy"));
  s.save(dir.file("s.json"));
  const Session r = Session::load(dir.file("s.json"));
  EXPECT_TRUE(std::filesystem::equivalent(r.source.q, dir.file("inputs/Q.npy"))) << r.source.q;
  EXPECT_TRUE(std::filesystem::equivalent(r.source.k, dir.file("inputs/K.npy"))) << r.source.k;
  EXPECT_EQ(r.viewState, s.viewState);
  EXPECT_EQ(r.operators.size(), 2u);
}

TEST(Session, SaveLoadRoundTrip) {
  test::TempDir dir;
  const Session s = richSession();
  s.save(dir.file("s.json"));
  const Session r = Session::load(dir.file("s.json"));
  EXPECT_EQ(r.toJson(), s.toJson());
  // The file is JSON a person can read.
  const json onDisk = json::parse(test::readBytes(dir.file("s.json")));
  EXPECT_EQ(onDisk, s.toJson());
}

TEST(Session, SaveIsAtomic) {
  test::TempDir dir;
  const std::string path = dir.file("s.json");
  Session first = richSession();
  first.save(path);
  Session second = richSession();
  second.exportSettings.width = 321;
  second.save(path);
  EXPECT_EQ(Session::load(path).exportSettings.width, 321) << "existing session replaced";
  EXPECT_EQ(dir.list(), std::vector<std::string>{"s.json"}) << "no temporary files left";
  const std::string missing = (dir.path() / "nope" / "s.json").string();
  EXPECT_TRUE(throwsWith<FileError>([&] { first.save(missing); }, {"s.json"}));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"s.json"});
}

// Load failures: a clear tl::Error (FileError or InvalidArgument), never a crash or a raw json exception.
template <class F>
[[nodiscard]] ::testing::AssertionResult rejected(F&& f, const std::vector<std::string>& needles = {}) {
  const auto asFile = throwsWith<FileError>(f, needles);
  if (asFile) return asFile;
  const auto asArg = throwsWith<InvalidArgument>(f, needles);
  if (asArg) return asArg;
  return ::testing::AssertionFailure() << "as FileError: " << asFile.message() << "; as InvalidArgument: "
                                       << asArg.message();
}

TEST(Session, RejectsWrongFormatName) {
  json j = richSession().toJson();
  const std::string key = formatKey(j);
  ASSERT_FALSE(key.empty()) << j.dump(2);
  j[key] = "some-other-tool";
  EXPECT_TRUE(rejected([&] { (void)Session::fromJson(j); }, {Session::kFormatName}));
  test::TempDir dir;
  test::writeBytes(dir.file("other.json"), j.dump());
  EXPECT_TRUE(rejected([&] { (void)Session::load(dir.file("other.json")); }, {"other.json"}));
  json noFormat = richSession().toJson();
  noFormat.erase(key);
  EXPECT_TRUE(rejected([&] { (void)Session::fromJson(noFormat); }));
}

TEST(Session, RejectsNewerVersion) {
  json j = richSession().toJson();
  const std::string key = versionKey(j);
  ASSERT_FALSE(key.empty()) << j.dump(2);
  j[key] = Session::kFormatVersion + 1;
  EXPECT_TRUE(rejected([&] { (void)Session::fromJson(j); }, {"version", std::to_string(Session::kFormatVersion + 1)}));
  test::TempDir dir;
  test::writeBytes(dir.file("newer.json"), j.dump());
  EXPECT_TRUE(rejected([&] { (void)Session::load(dir.file("newer.json")); }, {"newer.json"}));
}

TEST(Session, RejectsMalformedFiles) {
  test::TempDir dir;
  test::writeBytes(dir.file("broken.json"), "{\"format\": \"transportlens-session\", ");
  EXPECT_TRUE(rejected([&] { (void)Session::load(dir.file("broken.json")); }, {"broken.json"}));
  test::writeBytes(dir.file("array.json"), "[1, 2, 3]");
  EXPECT_TRUE(rejected([&] { (void)Session::load(dir.file("array.json")); }, {"array.json"}));
  test::writeBytes(dir.file("empty.json"), "");
  EXPECT_TRUE(rejected([&] { (void)Session::load(dir.file("empty.json")); }, {"empty.json"}));
  const std::string missing = dir.file("missing.json");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)Session::load(missing); }, {missing}));
}

// Found by the fuzzer (tests/fuzz/corpus/session/found-*): a field of the wrong JSON type where the format name is
// read, and a number too large for a double, both escaped as raw JSON exceptions.
TEST(Session, RejectsWhatTheFuzzerFound) {
  test::TempDir dir;
  test::writeBytes(dir.file("format.json"), R"({"format": ["transportlens-session"], "version": 1})");
  EXPECT_TRUE(rejected([&] { (void)Session::load(dir.file("format.json")); }, {"format.json"}));
  json hugeVersion = richSession().toJson();
  hugeVersion["version"] = 1.1e111;  // a double where an int belongs: converting it was undefined behaviour
  EXPECT_TRUE(rejected([&] { (void)Session::fromJson(hugeVersion); }, {"version", "integer"}));
  test::writeBytes(dir.file("overflow.json"), "1e999999");
  EXPECT_TRUE(rejected([&] { (void)Session::load(dir.file("overflow.json")); }, {"overflow.json", "JSON"}));
}

TEST(Session, RejectsExportSizesNoFigureCouldHave) {
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"width", 1 << 30}, {"height", -5}, {"scale", 0.0}, {"scale", 1e300}}) {
    json j = richSession().toJson();
    j["export"][field] = value;
    EXPECT_TRUE(rejected([&] { (void)Session::fromJson(j); }, {"export"})) << field << " = " << value;
  }
  json fine = richSession().toJson();
  fine["export"]["width"] = 4000;
  fine["export"]["scale"] = 4.0;
  EXPECT_EQ(Session::fromJson(fine).exportSettings.width, 4000);
}

TEST(Session, RejectsBadContent) {
  const json good = richSession().toJson();
  // Replace every occurrence of the family name "sinkhorn" by an unknown one.
  json j = json::parse([&] {
    std::string text = good.dump();
    for (size_t pos; (pos = text.find("\"sinkhorn")) != std::string::npos;) text.replace(pos, 9, "\"nosuchop");
    return text;
  }());
  EXPECT_TRUE(rejected([&] { (void)Session::fromJson(j); }, {"nosuchop"}));
  // Wrong JSON types inside (precision as a number).
  json k = good;
  for (auto it = k.begin(); it != k.end(); ++it)
    if (it->is_string() && (it->get<std::string>() == "f32")) *it = 32;
  if (k != good) {
    EXPECT_TRUE(rejected([&] { (void)Session::fromJson(k); }));
  }
}

}  // namespace
}  // namespace tl
