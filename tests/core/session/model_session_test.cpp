// Model sources through sources, sessions and the Engine, with a stand-in ModelBackend (no LibTorch): the
// attention input is the chosen layer and head, the swap scope decides which layers re-run with the
// primary operator, bad indices and a missing backend give clear errors, and sessions round-trip.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/errors.h"
#include "session/engine.h"
#include "support/test_util.h"
#include "vit/model_backend.h"

namespace tl {
namespace {

constexpr int kLayers = 3, kHeads = 2, kTokens = 5, kHeadDim = 4;

// Head (l, h) of the stand-in model has Q(0, 0) = 10·l + h, so a test can tell which head it got (the rest of Q is
// Gaussian: a compiled ASAP layer's plan depends on its β only when the queries differ).
class StandInBackend : public ModelBackend {
 public:
  std::shared_ptr<const ModelRun> run(const ModelSourceSpec& source, Feedback&) override {
    auto run = std::make_shared<ModelRun>();
    run->checkpoint = source.checkpoint;
    uint64_t seed = 1;  // every run of the model gives the same K and V
    for (int l = 0; l < kLayers; ++l) {
      VitLayerTrace layer;
      for (int h = 0; h < kHeads; ++h) {
        VitHeadTrace head;
        head.input.Q = test::gaussian(kTokens, kHeadDim, seed++);
        head.input.Q(0, 0) = 10 * l + h;
        head.input.K = test::gaussian(kTokens, kHeadDim, seed++);
        head.input.V = test::gaussian(kTokens, kHeadDim, seed++);
        head.attention = MatD::Constant(kTokens, kTokens, 1.0 / kTokens);
        layer.heads.push_back(head);
      }
      run->trace.layers.push_back(layer);
    }
    run->trace.logits = VecD::LinSpaced(3, 0, 1);
    return run;
  }
  VitTrace rerun(const ModelRun& base, int fromLayer, const std::map<int, OperatorSpec>& swaps, Feedback&,
                 DeviceChoice device) override {
    lastFrom = fromLayer;
    lastSwaps = swaps;
    lastDevice = device;
    return base.trace;
  }
  CompiledAsap compileAsap(const std::string&, const AsapCompileOptions&, Feedback&) override {
    throw InvalidArgument("the stand-in model cannot be compiled");
  }
  int lastFrom = -1;
  DeviceChoice lastDevice = DeviceChoice::Cpu;
  std::map<int, OperatorSpec> lastSwaps;
};

class ModelSession : public ::testing::Test {
 protected:
  void SetUp() override { installModelBackend(backend_); }
  void TearDown() override { installModelBackend(nullptr); }

  Session session(const std::string& source, SwapScope scope) const {
    Session s;
    s.source = SourceSpec::parse(source);
    s.operators = {OperatorRegistry::builtin().parse("sinkhorn:T=3")};
    s.swapScope = scope;
    return s;
  }

  std::shared_ptr<StandInBackend> backend_ = std::make_shared<StandInBackend>();
};

TEST_F(ModelSession, TheInputIsTheChosenLayerAndHead) {
  const SessionResult r = runSession(session("model:checkpoint=ckpt,layer=2,head=1", SwapScope::None));
  ASSERT_TRUE(r.model);
  EXPECT_EQ((*r.input).Q(0, 0), 21.0);
  EXPECT_TRUE(test::matricesNear(*r.input->V, *r.model->trace.layers[2].heads[1].input.V, 0.0));
  EXPECT_FALSE(r.swapped);
  EXPECT_TRUE(r.swappedLayers.empty());
  EXPECT_EQ(backend_->lastFrom, -1);  // scope none: the model is not re-run
}

TEST_F(ModelSession, SwapScopeChoosesTheLayersThatRunThePrimaryOperator) {
  const struct {
    SwapScope scope;
    std::vector<int> layers;
  } cases[] = {{SwapScope::Layer, {1}}, {SwapScope::FromLayer, {1, 2}}, {SwapScope::AllLayers, {0, 1, 2}}};
  for (const auto& c : cases) {
    const SessionResult r = runSession(session("model:checkpoint=ckpt,layer=1,head=0", c.scope));
    EXPECT_EQ(r.swappedLayers, c.layers) << swapScopeName(c.scope);
    ASSERT_TRUE(r.swapped);
    EXPECT_EQ(backend_->lastFrom, c.layers.front());
    ASSERT_EQ(backend_->lastSwaps.size(), c.layers.size());
    for (const auto& [layer, spec] : backend_->lastSwaps) EXPECT_EQ(spec.toString(), r.session.operators[0].toString());
  }
}

TEST_F(ModelSession, ListedScopeSwapsExactlyTheListedLayers) {
  Session s = session("model:checkpoint=ckpt,layer=1,head=0", SwapScope::Listed);
  s.swapLayers = {0, 2};
  const SessionResult r = runSession(s);
  EXPECT_EQ(r.swappedLayers, (std::vector<int>{0, 2}));
  ASSERT_TRUE(r.swapped);
  ASSERT_EQ(backend_->lastSwaps.size(), 2u);
  EXPECT_EQ(backend_->lastSwaps.count(0) + backend_->lastSwaps.count(2), 2u);
  s.swapLayers = {0, 3};
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([&] { (void)runSession(s); }, {"swap_layers", "layer 3", "3 layers"}));
}

TEST_F(ModelSession, TheSessionsDeviceReachesTheModelsSwapPath) {
  Session s = session("model:checkpoint=ckpt,layer=1,head=0", SwapScope::Layer);
  s.device = DeviceChoice::Auto;
  (void)runSession(s);
  EXPECT_EQ(backend_->lastDevice, DeviceChoice::Auto) << "the swapped layer's heads run where the session says";
}

// A compiled model's operator (asap:compiled=DIR, layer left at −1) runs on the source's head as that head's layer:
// the plan equals the one with the layer named.
TEST_F(ModelSession, ACompiledOperatorRunsAsTheSourcesLayer) {
  const test::TempDir temp;
  CompiledAsap compiled;
  compiled.teacher = "sinkhorn:T=4,eps=1,mask_mode=subsequence";
  compiled.T = 4;
  compiled.closing = "column";
  for (int layer : {1, 2}) {
    CompiledAsapLayer l;
    l.layer = layer;
    l.slices = test::gaussian(6, kHeadDim, 30 + layer);
    l.beta = test::gaussian(6, 1, 40 + layer);
    compiled.layers.push_back(l);
  }
  saveCompiledAsap(temp.path().string(), compiled);
  const std::string op = compiledAsapOperator(compiled, temp.path().string());
  Session s = session("model:checkpoint=ckpt,layer=2,head=1", SwapScope::None);
  s.operators = {OperatorRegistry::builtin().parse(op)};
  const SessionResult r = runSession(s);
  const auto named = runOperator(OperatorRegistry::builtin().parse(op + ",layer=2"), *r.input, Precision::F64);
  EXPECT_TRUE(test::matricesNear(r.runs.front().result.plan.dense(), named.plan.dense(), 0.0));
  const auto other = runOperator(OperatorRegistry::builtin().parse(op + ",layer=1"), *r.input, Precision::F64);
  EXPECT_FALSE(test::matricesNear(r.runs.front().result.plan.dense(), other.plan.dense(), 1e-6));
}

TEST_F(ModelSession, IndicesOutsideTheModelNameTheValidRange) {
  try {
    (void)runSession(session("model:checkpoint=ckpt,layer=3,head=0", SwapScope::None));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("layers 0..2"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)runSession(session("model:checkpoint=ckpt,layer=0,head=2", SwapScope::None)), InvalidArgument);
  EXPECT_THROW((void)SourceSpec::parse("model:layer=1"), InvalidArgument);  // no checkpoint
  EXPECT_THROW((void)SourceSpec::parse("model:checkpoint=c,colour=red"), InvalidArgument);
  EXPECT_THROW((void)SourceSpec::parse("model:checkpoint=c,image=fashion-mnist:validation:3"), InvalidArgument);
}

TEST_F(ModelSession, WithoutABackendTheErrorSaysWhy) {
  installModelBackend(nullptr);
  try {
    (void)runSession(session("model:checkpoint=ckpt", SwapScope::None));
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LibTorch"), std::string::npos) << e.what();
  }
}

TEST_F(ModelSession, SessionsRoundTripWithPathsRelativeToTheirFolder) {
  const test::TempDir temp;
  const std::string dir = temp.path().string();
  std::filesystem::create_directories(dir + "/ckpt");
  Session s = session("model:checkpoint=" + dir + "/ckpt,image=" + dir + "/shirt.png,layer=2,head=1", SwapScope::FromLayer);
  s.save(dir + "/session.json");
  const std::string text = test::readBytes(dir + "/session.json");
  EXPECT_NE(text.find("\"checkpoint\": \"ckpt\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"image\": \"shirt.png\""), std::string::npos) << text;
  const Session back = Session::load(dir + "/session.json");
  EXPECT_EQ(back.source.toString(), s.source.toString());
  EXPECT_EQ(back.swapScope, SwapScope::FromLayer);
}

}  // namespace
}  // namespace tl
