// Input sources: seeded synthetic generators and user .npy files.
#include "session/source.h"

#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "io/npy.h"
#include "session/source_loader.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::matricesNear;
using test::throwsWith;

TEST(Synthetic, GeneratorsAreListed) {
  const auto& gens = syntheticGenerators();
  bool gaussian = false, cloud = false;
  for (const auto& g : gens) {
    gaussian |= g.name == "gaussian";
    cloud |= g.name == "cloud";
    EXPECT_TRUE(bool(g.generate)) << g.name;
    EXPECT_FALSE(g.description.empty()) << g.name;
  }
  EXPECT_TRUE(gaussian);
  EXPECT_TRUE(cloud);
  EXPECT_EQ(syntheticGenerator("cloud").name, "cloud");
  EXPECT_TRUE(syntheticGenerator("cloud").pointCloud);
  EXPECT_FALSE(syntheticGenerator("gaussian").pointCloud);
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)syntheticGenerator("nosuch"); }, {"nosuch"}));
}

TEST(Synthetic, ShapesFollowParameters) {
  for (auto [n, d] : {std::pair{16, 4}, std::pair{1, 1}, std::pair{33, 64}}) {
    const auto spec = SourceSpec::parse("synthetic:gaussian:n=" + std::to_string(n) + ",d=" + std::to_string(d) +
                                        ",seed=3");
    EXPECT_EQ(spec.kind, SourceSpec::Kind::Synthetic);
    EXPECT_EQ(spec.generator, "gaussian");
    EXPECT_FALSE(spec.isPointCloud());
    const auto in = loadSource(spec).attention();
    EXPECT_EQ(in.Q.rows(), n);
    EXPECT_EQ(in.Q.cols(), d);
    EXPECT_EQ(in.K.rows(), n);
    EXPECT_EQ(in.K.cols(), d);
    if (in.V) {
      EXPECT_EQ(in.V->rows(), n);
    }
    EXPECT_TRUE(in.Q.allFinite());
    EXPECT_TRUE(in.K.allFinite());
    EXPECT_NO_THROW(validateInput(in));
  }
}

TEST(Synthetic, SameSeedIdenticalDifferentSeedDifferent) {
  const auto a = loadSource(SourceSpec::parse("synthetic:gaussian:n=20,d=8,seed=5")).attention();
  const auto b = loadSource(SourceSpec::parse("synthetic:gaussian:n=20,d=8,seed=5")).attention();
  const auto c = loadSource(SourceSpec::parse("synthetic:gaussian:n=20,d=8,seed=6")).attention();
  EXPECT_TRUE(test::matricesIdentical(a.Q, b.Q));
  EXPECT_TRUE(test::matricesIdentical(a.K, b.K));
  EXPECT_GT((a.Q - c.Q).cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_GT((a.K - c.K).cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_GT((a.Q - a.K).cwiseAbs().maxCoeff(), 1e-3) << "Q and K should be different draws";
  // Gaussian draws look like N(0, 1) in aggregate.
  const auto big = loadSource(SourceSpec::parse("synthetic:gaussian:n=200,d=50,seed=1")).attention();
  EXPECT_NEAR(big.Q.mean(), 0.0, 0.05);
  EXPECT_NEAR(big.Q.array().square().mean(), 1.0, 0.1);
}

TEST(Synthetic, PointCloudsAreThreeDimensional) {
  const auto& gen = syntheticGenerator("cloud");
  std::vector<std::string> shapes;
  if (const ParamSpec* shape = gen.schema.find("shape")) shapes = shape->choices;
  if (shapes.empty()) shapes = {"torus"};
  for (const auto& shape : shapes) {
    SCOPED_TRACE(shape);
    const std::string text = "synthetic:cloud:shape=" + shape + ",n=120,seed=2";
    const auto spec = SourceSpec::parse(text);
    EXPECT_TRUE(spec.isPointCloud());
    const auto in = loadSource(spec).attention();
    EXPECT_EQ(in.Q.rows(), 120);
    EXPECT_EQ(in.Q.cols(), 3);
    EXPECT_EQ(in.K.rows(), 120);
    EXPECT_EQ(in.K.cols(), 3);
    EXPECT_TRUE(in.Q.allFinite());
    EXPECT_GT(in.Q.cwiseAbs().maxCoeff(), 0.0);
    EXPECT_TRUE(test::matricesIdentical(loadSource(SourceSpec::parse(text)).attention().Q, in.Q));
    const auto other = loadSource(SourceSpec::parse("synthetic:cloud:shape=" + shape + ",n=120,seed=3")).attention();
    EXPECT_GT((other.Q - in.Q).cwiseAbs().maxCoeff(), 1e-6) << "seed must matter";
  }
}

TEST(SourceSpec, TextRoundTrip) {
  for (const char* text : {"synthetic:gaussian:n=256,d=64,seed=0", "synthetic:gaussian:n=3,d=2,seed=123456789",
                           "synthetic:cloud:shape=torus,n=300,seed=0", "files:q=Q.npy,k=K.npy",
                           "files:q=/data/Q.npy,k=/data/K.npy,v=/data/V.npy,mask=/data/M.npy"}) {
    SCOPED_TRACE(text);
    const auto spec = SourceSpec::parse(text);
    const auto again = SourceSpec::parse(spec.toString());
    EXPECT_EQ(again.toString(), spec.toString());
    EXPECT_EQ(again.kind, spec.kind);
    EXPECT_EQ(again.generator, spec.generator);
    EXPECT_EQ(again.params, spec.params);
    EXPECT_EQ(again.q, spec.q);
    EXPECT_EQ(again.k, spec.k);
    EXPECT_EQ(again.v, spec.v);
    EXPECT_EQ(again.mask, spec.mask);
  }
  const auto files = SourceSpec::parse("files:q=/data/Q.npy,k=/data/K.npy,v=/data/V.npy,mask=/data/M.npy");
  EXPECT_EQ(files.kind, SourceSpec::Kind::Files);
  EXPECT_EQ(files.q, "/data/Q.npy");
  EXPECT_EQ(files.k, "/data/K.npy");
  EXPECT_EQ(files.v, "/data/V.npy");
  EXPECT_EQ(files.mask, "/data/M.npy");
  const auto syn = SourceSpec::parse("synthetic:gaussian:n=256,d=64,seed=0");
  EXPECT_EQ(getInt(syn.params, "n"), 256);
  EXPECT_EQ(getInt(syn.params, "d"), 64);
  EXPECT_EQ(getInt(syn.params, "seed"), 0);
}

TEST(SourceSpec, RejectsMalformedText) {
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)SourceSpec::parse("webcam:n=3"); }));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)SourceSpec::parse("synthetic:nosuch:n=3"); }, {"nosuch"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)SourceSpec::parse("synthetic:gaussian:n=0,d=4"); }));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)SourceSpec::parse("synthetic:gaussian:n=4,colour=red"); },
                                          {"colour"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)loadSource(SourceSpec::parse("files:k=K.npy")).attention(); }))
      << "q is required";
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)SourceSpec::parse("files:q=Q.npy,k=K.npy,w=W.npy"); }));
}

class FilesSource : public ::testing::Test {
 protected:
  void SetUp() override {
    Q = test::gaussian(n, d, 1);
    K = test::gaussian(n, d, 2);
    V = test::gaussian(n, 3, 3);
    writeNpy(dir.file("Q.npy"), Q);
    writeNpy(dir.file("K.npy"), K);
    writeNpy(dir.file("V.npy"), V);
  }
  SourceSpec spec(const std::string& q, const std::string& k, const std::string& v = "", const std::string& m = "") {
    std::string text = "files:q=" + dir.file(q) + ",k=" + dir.file(k);
    if (!v.empty()) text += ",v=" + dir.file(v);
    if (!m.empty()) text += ",mask=" + dir.file(m);
    return SourceSpec::parse(text);
  }
  const int n = 7, d = 4;
  test::TempDir dir;
  MatD Q, K, V;
};

TEST_F(FilesSource, LoadsNpyFiles) {
  VecD mask(n);
  mask << 1, 1, 0, 1, 1, 1, 0;
  writeNpy(dir.file("M.npy"), mask);
  const auto in = loadSource(spec("Q.npy", "K.npy", "V.npy", "M.npy")).attention();
  EXPECT_TRUE(test::matricesIdentical(in.Q, Q));
  EXPECT_TRUE(test::matricesIdentical(in.K, K));
  ASSERT_TRUE(in.V.has_value());
  EXPECT_TRUE(test::matricesIdentical(*in.V, V));
  ASSERT_TRUE(in.mask.has_value());
  ASSERT_EQ(in.mask->size(), n);
  for (int i = 0; i < n; ++i) EXPECT_EQ((*in.mask)(i), mask(i) != 0) << i;
  const auto noV = loadSource(spec("Q.npy", "K.npy")).attention();
  EXPECT_FALSE(noV.V.has_value());
  EXPECT_FALSE(noV.mask.has_value());
}

TEST_F(FilesSource, RejectsMismatchedHeadDimension) {
  writeNpy(dir.file("K5.npy"), MatD(test::gaussian(n, 5, 9)));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)loadSource(spec("Q.npy", "K5.npy")).attention(); }));
}

TEST_F(FilesSource, RejectsNaNNamingQ) {
  MatD bad = Q;
  bad(3, 1) = std::numeric_limits<double>::quiet_NaN();
  writeNpy(dir.file("Qnan.npy"), bad);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)loadSource(spec("Qnan.npy", "K.npy")).attention(); }, {"Q"}));
}

TEST_F(FilesSource, RejectsMaskOfWrongLength) {
  writeNpy(dir.file("M5.npy"), VecD(VecD::Ones(5)));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)loadSource(spec("Q.npy", "K.npy", "", "M5.npy")).attention(); },
                                          {"mask"}));
}

TEST_F(FilesSource, RejectsValuesWithWrongRowCount) {
  writeNpy(dir.file("V5.npy"), MatD(test::gaussian(5, 3, 9)));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)loadSource(spec("Q.npy", "K.npy", "V5.npy")).attention(); }, {"V"}));
}

TEST_F(FilesSource, MissingFileNamesThePath) {
  const std::string missing = dir.file("absent_Q.npy");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)loadSource(spec("absent_Q.npy", "K.npy")).attention(); }, {missing}));
}

}  // namespace
}  // namespace tl
