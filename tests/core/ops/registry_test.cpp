// Family registry: the one list of operators that UI, CLI, Session and tests enumerate.
#include "ops/registry.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ops/sinkhorn/sinkhorn.h"
#include "ops/softmax/softmax.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

const OperatorRegistry& reg() { return OperatorRegistry::builtin(); }

TEST(Registry, BuiltinListsSoftmaxAndSinkhorn) {
  std::vector<std::string> names;
  for (const auto& f : reg().families()) {
    names.push_back(f.name);
    EXPECT_FALSE(f.title.empty()) << f.name;
    EXPECT_FALSE(f.description.empty()) << f.name;
    EXPECT_TRUE(bool(f.create)) << f.name;
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "softmax"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "sinkhorn"), names.end());
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicate family names";
  EXPECT_EQ(reg().get("sinkhorn").name, "sinkhorn");
}

TEST(Registry, ParseResolvesDefaults) {
  const OperatorSpec spec = reg().parse("sinkhorn:T=10,eps=0.5");
  EXPECT_EQ(spec.family, "sinkhorn");
  EXPECT_EQ(getInt(spec.params, "T"), 10);
  EXPECT_DOUBLE_EQ(getReal(spec.params, "eps"), 0.5);
  EXPECT_EQ(getString(spec.params, "mask_mode"), "subsequence");
  const auto p = SinkhornParams::from(spec.params);
  EXPECT_EQ(p.T, 10);
  EXPECT_DOUBLE_EQ(p.eps, 0.5);
  EXPECT_EQ(p.maskMode, MaskMode::Subsequence);

  // Defaults of the glossary: eps = 1.
  const OperatorSpec bare = reg().parse("sinkhorn");
  EXPECT_DOUBLE_EQ(getReal(bare.params, "eps"), 1.0);
  EXPECT_GE(getInt(bare.params, "T"), 1);

  const OperatorSpec kq = reg().parse("sinkhorn:mask_mode=keep-queries,T=3");
  EXPECT_EQ(SinkhornParams::from(kq.params).maskMode, MaskMode::KeepQueries);
  EXPECT_EQ(SinkhornParams::from(kq.params).T, 3);

  const OperatorSpec sm = reg().parse("softmax");
  EXPECT_EQ(sm.family, "softmax");
  EXPECT_EQ(getString(sm.params, "mask_mode"), "subsequence");
}

TEST(Registry, UnknownFamilyListsKnownOnes) {
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorm:T=3"); }, {"sinkhorm", "sinkhorn", "softmax"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().get("nope"); }, {"nope"}));
}

TEST(Registry, RejectsBadParameters) {
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:T=10,temperature=2"); }, {"temperature"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:T=0"); }, {"T"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:T=-3"); }, {"T"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:eps=0"); }, {"eps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:eps=-1"); }, {"eps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:eps=abc"); }, {"eps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:T=ten"); }, {"T"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:T=2.5"); }, {"T"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("sinkhorn:mask_mode=bogus"); }, {"mask_mode"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("softmax:T=3"); }, {"T"}));
  // resolve() with typed values applies the same checks.
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().resolve("sinkhorn", ParamSet{{"eps", 0.0}}); }, {"eps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().resolve("sinkhorn", ParamSet{{"bogus", 1.0}}); }, {"bogus"}));
}

TEST(Registry, ToStringParseRoundTrip) {
  for (const char* text : {"sinkhorn:T=7,eps=0.3", "sinkhorn:T=1,eps=2.5,mask_mode=keep-queries", "softmax",
                           "softmax:mask_mode=keep-queries", "sinkhorn:eps=0.1234567890123"}) {
    SCOPED_TRACE(text);
    const OperatorSpec spec = reg().parse(text);
    const std::string s = spec.toString();
    EXPECT_EQ(s.rfind(spec.family, 0), 0u) << s;
    const OperatorSpec again = reg().parse(s);
    EXPECT_EQ(again.family, spec.family);
    EXPECT_EQ(again.params, spec.params) << s;
    EXPECT_EQ(again.toString(), s);
    // formatParams + schema parse round trip too.
    const auto& schema = reg().get(spec.family).schema;
    EXPECT_EQ(schema.parse(formatParams(spec.params, &schema), spec.family), spec.params);
  }
}

TEST(Registry, DescribeSchemaMentionsEveryParameter) {
  for (const auto& f : reg().families()) {
    const std::string help = describeSchema(f.schema);
    for (const auto& spec : f.schema.specs()) {
      EXPECT_NE(help.find(spec.name), std::string::npos) << f.name << ": " << spec.name << " missing from\n" << help;
    }
  }
  const std::string help = describeSchema(reg().get("sinkhorn").schema);
  for (const char* name : {"T", "eps", "mask_mode"}) EXPECT_NE(help.find(name), std::string::npos) << name;
}

// create() gives an operator that computes exactly what the family function computes.
TEST(Registry, CreatedOperatorMatchesDirectCall) {
  AttentionInput<double> in;
  in.Q = test::gaussian(9, 4, 1);
  in.K = test::gaussian(9, 4, 2);
  const OperatorSpec spec = reg().parse("sinkhorn:T=6,eps=0.7");
  const auto op = reg().create(spec);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->family(), "sinkhorn");
  EXPECT_EQ(op->params(), spec.params);
  SinkhornParams p;
  p.T = 6;
  p.eps = 0.7;
  EXPECT_TRUE(test::matricesNear(op->run(in, noFeedback()).plan.dense(), sinkhornAttention(in, p).plan.dense(), 0.0));
  EXPECT_TRUE(test::matricesNear(op->run(in.cast<float>(), noFeedback()).plan.dense(),
                                 sinkhornAttention(in.cast<float>(), p).plan.dense(), 0.0));
  const auto sm = reg().create(reg().parse("softmax"));
  EXPECT_TRUE(test::matricesNear(sm->run(in, noFeedback()).plan.dense(), softmaxAttention(in, SoftmaxParams{}).plan.dense(), 0.0));
}

// The backend axis: every family runs on the CPU reference, and exactly the families with a LibTorch version
// in core/model/normalisers declare the torch backend (tl_model's tests check the other direction).
TEST(Registry, BackendAxis) {
  for (const auto& f : reg().families()) {
    ASSERT_FALSE(f.backends.empty()) << f.name;
    EXPECT_EQ(f.backends.front(), Backend::Cpu) << f.name << ": the CPU reference comes first";
    EXPECT_TRUE(f.supports(Backend::Cpu)) << f.name;
  }
  EXPECT_EQ(reg().familiesOn(Backend::Cpu).size(), reg().families().size());
  EXPECT_EQ(reg().familiesOn(Backend::Torch), (std::vector<std::string>{"softmax", "sinkhorn", "esp", "lot"}));
  // Device paths exist for the dense log-domain families, hard ESP (sorts and gathers), LOT (two rectangular
  // problems of the same kernels), ASAP (the closures as the transposed loop from its dual), banded (the band
  // kernels) and diff (two softmax launches), in every build; the cuda backend is listed only where CUDA was
  // built. Parameters without kernels (ASAP's features=predict-both) say why they run on the CPU.
  const std::vector<std::string> withKernels = {"softmax", "sinkhorn", "esp", "lot", "asap", "banded", "diff"};
  std::vector<std::string> withDevicePath;
  for (const auto& f : reg().families())
    if (f.devicePath) withDevicePath.push_back(f.name);
  EXPECT_EQ(withDevicePath, withKernels);
  EXPECT_EQ(reg().familiesOn(Backend::Cuda), cudaKernelsBuilt() ? withKernels : std::vector<std::string>{});
  // Both of ESP's sort modes have kernels; a build without CUDA says so for every family.
  const auto esp = reg().create(reg().parse("esp:sort=soft"));
  EXPECT_TRUE(esp->hasDevicePath());
  EXPECT_EQ(esp->cudaUnsupported().has_value(), !cudaKernelsBuilt());
  if (!cudaKernelsBuilt()) {
    EXPECT_NE(esp->cudaUnsupported()->find("without CUDA"), std::string::npos);
  }
  EXPECT_EQ(parseDeviceChoice("auto"), DeviceChoice::Auto);
  EXPECT_STREQ(deviceChoiceName(parseDeviceChoice("cuda")), "cuda");
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)parseDeviceChoice("gpu"); }, {"gpu", "cpu, cuda, auto"}));
}

// Every family's defaults (an operator from "family" alone) are valid wherever no file is required, and
// every parameter of every schema is accepted at its default by the typed parameters (a name bound under
// another spelling would be rejected as unknown or leave its field unset and fail the run below).
TEST(Registry, EveryFamilyRunsAtItsSchemaDefaults) {
  AttentionInput<double> in;
  in.Q = test::gaussian(40, 4, 1);  // n = 40 ≥ LOT's default r = 32; d even for diff
  in.K = test::gaussian(40, 4, 2);
  in.V = test::gaussian(40, 3, 3);
  for (const auto& f : reg().families()) {
    if (f.name == "asap") continue;  // needs a compiled layer or a dual file: no default can run
    const auto op = reg().create(reg().parse(f.name));
    const auto r = op->run(in, noFeedback());
    EXPECT_EQ(r.plan.rows(), 40) << f.name;
    EXPECT_TRUE(r.plan.dense().allFinite()) << f.name;
  }
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().create(reg().parse("asap")); }, {"asap", "dual"}));
}

}  // namespace
}  // namespace tl
