// core/model/torch_normalisers: every LibTorch normaliser equals the core CPU operator (the source of truth)
// on the same inputs, head by head — 1e-10 in float64, 1e-6 in float32 — and passes finite, nonzero
// gradients to everything it learns from.
#include "model/normalisers/torch_normalisers.h"

#include "common/errors.h"
#include "ops/esp/esp.h"
#include "ops/lot/lot.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::matricesNear;
using test::throwsWith;

template <class T>
constexpr torch::Dtype dtypeOf() {
  return std::is_same_v<T, double> ? torch::kFloat64 : torch::kFloat32;
}

template <class T>
Mat<T> head(const torch::Tensor& t, int64_t b, int64_t h) {
  const torch::Tensor c = t[b][h].detach().contiguous();
  return Eigen::Map<const Mat<T>>(c.data_ptr<T>(), c.size(0), c.size(1));
}

struct Batch {
  torch::Tensor q, k, v, mask;  // [B, H, n, d] ×3, mask [B, n] or undefined
};

// Scores of order one: q, k ~ N(0, scale²), d = 6 (so S = QKᵀ/√d ~ N(0, scale⁴)).
Batch randomBatch(torch::Dtype dtype, int64_t n = 9, uint64_t seed = 7, double scale = 1.2) {
  torch::manual_seed(seed);
  const auto opts = torch::TensorOptions().dtype(dtype);
  return {scale * torch::randn({2, 3, n, 6}, opts), scale * torch::randn({2, 3, n, 6}, opts),
          torch::randn({2, 3, n, 5}, opts), {}};
}

Mask maskOf(const torch::Tensor& mask, int64_t b) {
  Mask m(mask.size(1));
  for (int64_t i = 0; i < mask.size(1); ++i) m(i) = mask[b][i].item<bool>();
  return m;
}

using CoreRun = std::function<PlanResult<double>(const AttentionInput<double>&, int64_t head)>;

// Runs the core path head by head in precision T and compares plan and output with the LibTorch module.
// Plans (entries in [0, 1]) are compared at `tol`; outputs, weighted averages of V's rows, at tol·max|V|.
template <class T>
[[nodiscard]] ::testing::AssertionResult matchesCore(TorchNormaliserImpl& op, const Batch& in, double tol,
                                                     const std::function<PlanResult<T>(const AttentionInput<T>&, int64_t)>& core) {
  const TorchAttention got = op.forward(in.q, in.k, in.v, /*withAttention=*/true, in.mask);
  const double outputTol = tol * std::max(1.0, in.v.abs().max().item<double>());
  for (int64_t b = 0; b < in.q.size(0); ++b)
    for (int64_t h = 0; h < in.q.size(1); ++h) {
      AttentionInput<T> input{head<T>(in.q, b, h), head<T>(in.k, b, h), head<T>(in.v, b, h), std::nullopt};
      if (in.mask.defined()) input.mask = maskOf(in.mask, b);
      const PlanResult<T> want = core(input, h);
      if (auto r = matricesNear(head<T>(got.attention, b, h), want.plan.dense(), tol); !r) return r << " (plan, b=" << b << ", h=" << h << ")";
      if (auto r = matricesNear(head<T>(got.output, b, h), *want.output, outputTol); !r) return r << " (output, b=" << b << ", h=" << h << ")";
    }
  return ::testing::AssertionSuccess();
}

// The core registry operator for `spec`, in precision T.
template <class T>
std::function<PlanResult<T>(const AttentionInput<T>&, int64_t)> registryOperator(const std::string& spec) {
  std::shared_ptr<Operator> op = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse(spec));
  return [op](const AttentionInput<T>& in, int64_t) { return op->run(in, noFeedback()); };
}

template <class T>
[[nodiscard]] ::testing::AssertionResult sameAsRegistry(const std::string& spec, const Batch& in, double tol, bool training = false) {
  TorchNormaliser op = makeTorchNormaliser(OperatorRegistry::builtin().parse(spec), int(in.q.size(1)), int(in.q.size(3)));
  op->train(training);
  return matchesCore<T>(*op, in, tol, registryOperator<T>(spec));
}

TEST(TorchNormalisers, SoftmaxEqualsTheCoreOperator) {
  EXPECT_TRUE(sameAsRegistry<double>("softmax", randomBatch(torch::kFloat64), 1e-10));
  EXPECT_TRUE(sameAsRegistry<float>("softmax", randomBatch(torch::kFloat32), 1e-6));
}

TEST(TorchNormalisers, SinkhornEqualsTheCoreOperatorForRowAndColumnEndingBudgets) {
  const Batch wide = randomBatch(torch::kFloat64), narrow = randomBatch(torch::kFloat32);
  for (int T : {1, 2, 3, 4, 5, 8, 21})
    for (double eps : {0.5, 1.0, 2.0}) {
      const std::string spec = "sinkhorn:T=" + std::to_string(T) + ",eps=" + std::to_string(eps);
      EXPECT_TRUE(sameAsRegistry<double>(spec, wide, 1e-10)) << spec;
      EXPECT_TRUE(sameAsRegistry<float>(spec, narrow, 1e-6)) << spec;
    }
}

TEST(TorchNormalisers, MasksFollowBothMaskModes) {
  Batch in = randomBatch(torch::kFloat64);
  in.mask = torch::ones({2, 9}, torch::kBool);
  in.mask[0][2] = false;
  in.mask[0][8] = false;
  in.mask[1][0] = false;
  for (const char* spec : {"softmax", "softmax:mask_mode=keep-queries", "sinkhorn:T=4", "sinkhorn:T=5,eps=0.7",
                           "sinkhorn:T=4,mask_mode=keep-queries", "sinkhorn:T=5,mask_mode=keep-queries"})
    EXPECT_TRUE(sameAsRegistry<double>(spec, in, 1e-10)) << spec;
}

TEST(TorchNormalisers, EspHardEqualsTheCoreOperator) {
  const Batch wide = randomBatch(torch::kFloat64), narrow = randomBatch(torch::kFloat32);
  for (const char* spec : {"esp", "esp:tau=0", "esp:tau=1", "esp:tau=1,p=1", "esp:tau=0.3,slicer=random,L=11,seed=3",
                           "esp:tau=1,compat=reference-code"}) {
    EXPECT_TRUE(sameAsRegistry<double>(spec, wide, 1e-10)) << spec;
    EXPECT_TRUE(sameAsRegistry<float>(spec, narrow, 1e-6)) << spec;
  }
}

TEST(TorchNormalisers, EspHardSharesTheCoreTieRules) {
  Batch grid = randomBatch(torch::kFloat64);
  grid.q = torch::round(grid.q * 2) / 2;  // values on a 0.5 grid: many tied projections
  grid.k = torch::round(grid.k * 2) / 2;
  EXPECT_TRUE(sameAsRegistry<double>("esp:tau=0.5", grid, 1e-10));
  EXPECT_TRUE(sameAsRegistry<double>("esp:tau=0.5,ties=break", grid, 1e-10));
}

// Inference without the attention matrix (tlens eval) takes the core's lazy hard path; its output is the
// dense hard plan's A·V, ties and compat included.
TEST(TorchNormalisers, EspInferenceWithoutTheAttentionMatrixEqualsTheDenseHardOutput) {
  Batch grid = randomBatch(torch::kFloat64, 20);
  grid.q = torch::round(grid.q * 2) / 2;  // tied projections, split or broken as the spec says
  grid.k = torch::round(grid.k * 2) / 2;
  const Batch narrow = randomBatch(torch::kFloat32, 20);
  for (const char* spec : {"esp", "esp:tau=1,p=1", "esp:tau=0.3,slicer=random,L=40,seed=3", "esp:tau=1,compat=reference-code",
                           "esp:tau=0.5,ties=break"}) {
    TorchNormaliser op = makeTorchNormaliser(OperatorRegistry::builtin().parse(spec), 3, 6);
    op->eval();
    torch::NoGradGuard noGrad;
    for (const Batch* in : {static_cast<const Batch*>(&grid), &narrow}) {
      const torch::Tensor lazy = op->forward(in->q, in->k, in->v, /*withAttention=*/false).output;
      const torch::Tensor dense = op->forward(in->q, in->k, in->v, /*withAttention=*/true).output;
      const double tol = in->q.scalar_type() == torch::kFloat64 ? 1e-10 : 1e-5;
      EXPECT_LE((lazy - dense).abs().max().item<double>(), tol * std::max(1.0, dense.abs().max().item<double>())) << spec;
    }
  }
}

TEST(TorchNormalisers, EspSoftEqualsTheCoreSoftPlan) {
  const Batch wide = randomBatch(torch::kFloat64), narrow = randomBatch(torch::kFloat32);
  EXPECT_TRUE(sameAsRegistry<double>("esp:tau=0.5,sort=soft,sort_temp=0.1", wide, 1e-10));
  EXPECT_TRUE(sameAsRegistry<double>("esp:tau=2,sort=soft,sort_temp=1", wide, 1e-10));
  EXPECT_TRUE(sameAsRegistry<float>("esp:tau=0.5,sort=soft,sort_temp=0.1", narrow, 1e-6));
  // Training always relaxes with SoftSort at sort_temp; evaluation uses the spec's sort (hard here).
  TorchNormaliser op = makeTorchNormaliser(OperatorRegistry::builtin().parse("esp:tau=0.5,sort_temp=0.1"), 3, 6);
  op->train(true);
  EXPECT_TRUE(matchesCore<double>(*op, wide, 1e-10, registryOperator<double>("esp:tau=0.5,sort=soft,sort_temp=0.1")));
  op->eval();
  EXPECT_TRUE(matchesCore<double>(*op, wide, 1e-10, registryOperator<double>("esp:tau=0.5")));
}

// Training's banded SoftSort output (withAttention = false) against the dense graph that the test above ties
// to the core operator: the same output and the same gradients for q, k and v, at tol·max(1, max|x|).
template <class T>
[[nodiscard]] ::testing::AssertionResult bandedMatchesDense(const std::string& spec, const Batch& in, double tol) {
  TorchNormaliser op = makeTorchNormaliser(OperatorRegistry::builtin().parse(spec), int(in.q.size(1)), int(in.q.size(3)));
  op->train(true);
  torch::manual_seed(5);
  const torch::Tensor outputWeights = torch::randn({in.q.size(0), in.q.size(1), in.q.size(2), in.v.size(3)}, dtypeOf<T>());
  auto run = [&](bool dense) {
    std::vector<torch::Tensor> x{in.q.clone().requires_grad_(), in.k.clone().requires_grad_(), in.v.clone().requires_grad_()};
    const torch::Tensor out = op->forward(x[0], x[1], x[2], /*withAttention=*/dense).output;
    (out * outputWeights).sum().backward();
    return std::vector<torch::Tensor>{out.detach(), x[0].grad(), x[1].grad(), x[2].grad()};
  };
  const std::vector<torch::Tensor> dense = run(true), banded = run(false);
  const char* names[] = {"output", "dq", "dk", "dv"};
  for (int i = 0; i < 4; ++i) {
    const double scale = std::max(1.0, dense[i].abs().max().item<double>());
    const double err = (dense[i] - banded[i]).abs().max().item<double>();
    if (!(err <= tol * scale))
      return ::testing::AssertionFailure() << names[i] << " differs by " << err << " (scale " << scale << ")";
  }
  return ::testing::AssertionSuccess();
}

TEST(TorchNormalisers, EspTrainingPathEqualsTheDenseSoftPlanInValueAndGradient) {
  // n = 50 tokens as in the sample checkpoints; at sort_temp = 1e-3 most SoftSort entries underflow to 0,
  // at sort_temp = 1 none do.
  const Batch wide = randomBatch(torch::kFloat64, 50), narrow = randomBatch(torch::kFloat32, 50);
  for (const char* spec : {"esp:sort_temp=0.001", "esp:tau=0.5,sort_temp=0.1", "esp:tau=2,sort_temp=1",
                           "esp:tau=1,sort_temp=0.01,slicer=random,L=5,seed=2", "esp:tau=0,sort_temp=0.001"}) {
    EXPECT_TRUE(bandedMatchesDense<double>(spec, wide, 1e-10)) << spec;
    EXPECT_TRUE(bandedMatchesDense<float>(spec, narrow, 2e-5)) << spec;
  }
  Batch grid = randomBatch(torch::kFloat64, 50);
  grid.q = torch::round(grid.q * 2) / 2;  // tied projections: whole groups share a SoftSort row
  grid.k = torch::round(grid.k * 2) / 2;
  // Which token of a tied group takes an anchor's gradient is the sort's choice (any is a subgradient), so
  // the weight leaking to the next group, exp(−0.5²/sort_temp), is kept far below the tolerance.
  EXPECT_TRUE(bandedMatchesDense<double>("esp:sort_temp=0.002", grid, 1e-10));
}

// tlens train promises the same weights for the same seed and thread count, so nothing about where the
// heap puts the path's buffers may reach its numbers (it once did: a vectorised exp over a plain heap buffer
// rounds its unaligned leading entries differently). Blocks of odd sizes are left allocated between runs.
TEST(TorchNormalisers, EspTrainingPathIsBitwiseReproducibleWhateverTheHeapHolds) {
  const Batch in = randomBatch(torch::kFloat32, 50);
  TorchNormaliser op = makeTorchNormaliser(OperatorRegistry::builtin().parse("esp"), 3, 6);
  op->train(true);
  std::vector<std::unique_ptr<char[]>> heapNoise;
  std::vector<torch::Tensor> runs;
  for (int run = 0; run < 4; ++run) {
    std::vector<torch::Tensor> x{in.q.clone().requires_grad_(), in.k.clone().requires_grad_(), in.v.clone().requires_grad_()};
    const torch::Tensor out = op->forward(x[0], x[1], x[2], /*withAttention=*/false).output;
    out.square().sum().backward();
    runs.push_back(torch::cat({out.detach().flatten(), x[0].grad().flatten(), x[1].grad().flatten(), x[2].grad().flatten()}));
    for (int block = 0; block < 40; ++block) heapNoise.emplace_back(new char[size_t(4 + (run * 13 + block * 7) % 61)]);
  }
  for (int run = 1; run < 4; ++run) EXPECT_TRUE(torch::equal(runs[run], runs[0])) << "run " << run;
}

TEST(TorchNormalisers, EspTrainingPathRefusesNonFiniteQueries) {
  Batch in = randomBatch(torch::kFloat32);
  in.q[0][1][2][3] = std::numeric_limits<float>::quiet_NaN();
  TorchNormaliser op = makeTorchNormaliser(OperatorRegistry::builtin().parse("esp"), 3, 6);
  op->train(true);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { op->forward(in.q, in.k, in.v, false); }, {"NaN or Inf"}));
}

// The module's pivots set to Z_h, θ_h, and the core operator given the same per head.
template <class T>
[[nodiscard]] ::testing::AssertionResult lotMatches(const std::string& spec, const Batch& in, double tol) {
  const OperatorSpec parsed = OperatorRegistry::builtin().parse(spec);
  TorchNormaliser op = makeTorchNormaliser(parsed, 3, 6);
  op->to(dtypeOf<T>());
  torch::manual_seed(11);
  const int64_t r = getInt(parsed.params, "r");
  const torch::Tensor Z = torch::randn({3, r, 6}, dtypeOf<T>()) * 0.8, theta = torch::randn({3, r}, dtypeOf<T>()) * 0.5;
  {
    torch::NoGradGuard noGrad;
    auto params = op->named_parameters();
    params["pivots"].copy_(Z);
    params["mass_logits"].copy_(theta);
  }
  return matchesCore<T>(*op, in, tol, [&](const AttentionInput<T>& input, int64_t h) {
    LotParams p = LotParams::from(parsed.params);
    p.pivotInit = PivotInit::File;
    p.pivots = head<T>(Z.unsqueeze(0), 0, h).template cast<double>();
    p.massLogits = head<T>(theta.unsqueeze(0).unsqueeze(-1), 0, h).template cast<double>();
    return lotAttention(input, p);
  });
}

TEST(TorchNormalisers, LotWithGivenPivotsEqualsTheCoreOperator) {
  const Batch wide = randomBatch(torch::kFloat64), narrow = randomBatch(torch::kFloat32);
  for (const char* spec : {"lot:r=4,T=1", "lot:r=4,T=4", "lot:r=5,T=5,eps=0.5", "lot:r=3,T=9,mass_temp=1"}) {
    EXPECT_TRUE(lotMatches<double>(spec, wide, 1e-10)) << spec;
    EXPECT_TRUE(lotMatches<float>(spec, narrow, 1e-6)) << spec;
  }
}

// loss = Σ O ⊙ R for a fixed random R: every input (and learned parameter) must get a finite, nonzero gradient.
[[nodiscard]] ::testing::AssertionResult gradientsFlow(const std::string& spec, bool training, bool withMask = false) {
  Batch in = randomBatch(torch::kFloat32);
  for (auto* t : {&in.q, &in.k, &in.v}) t->requires_grad_(true);
  if (withMask) {
    in.mask = torch::ones({2, 9}, torch::kBool);
    in.mask[1][4] = false;
  }
  TorchNormaliser op = makeTorchNormaliser(OperatorRegistry::builtin().parse(spec), 3, 6);
  op->train(training);
  const TorchAttention out = op->forward(in.q, in.k, in.v, false, in.mask);
  (out.output * torch::randn_like(out.output)).sum().backward();
  std::vector<std::pair<std::string, torch::Tensor>> grads = {{"q", in.q.grad()}, {"k", in.k.grad()}, {"v", in.v.grad()}};
  for (const auto& p : op->named_parameters()) grads.emplace_back(p.key(), p.value().grad());
  for (const auto& [name, g] : grads) {
    if (!g.defined()) return ::testing::AssertionFailure() << spec << ": no gradient for " << name;
    if (!torch::isfinite(g).all().item<bool>()) return ::testing::AssertionFailure() << spec << ": non-finite gradient for " << name;
    if (g.abs().max().item<double>() == 0) return ::testing::AssertionFailure() << spec << ": zero gradient for " << name;
  }
  return ::testing::AssertionSuccess();
}

TEST(TorchNormalisers, GradientsReachInputsAndLearnedParameters) {
  EXPECT_TRUE(gradientsFlow("softmax", true));
  EXPECT_TRUE(gradientsFlow("sinkhorn:T=5", true));
  EXPECT_TRUE(gradientsFlow("sinkhorn:T=4", true, /*withMask=*/true));
  EXPECT_TRUE(gradientsFlow("sinkhorn:T=3,mask_mode=keep-queries", true, /*withMask=*/true));
  EXPECT_TRUE(gradientsFlow("esp:tau=1,sort_temp=0.1", true));  // SoftSort while training
  EXPECT_TRUE(gradientsFlow("esp:tau=1", false));                // hard: through the slice weights and V
  EXPECT_TRUE(gradientsFlow("lot:r=4,T=5", true));
}

TEST(TorchNormalisers, FamiliesWithoutALibTorchVersionAreRefused) {
  EXPECT_FALSE(hasTorchNormaliser("asap"));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [] { makeTorchNormaliser(OperatorRegistry::builtin().parse("banded:W=2"), 2, 4); }, {"banded", "core path"}));
  Batch in = randomBatch(torch::kFloat32);
  in.mask = torch::ones({2, 9}, torch::kBool);
  in.mask[0][3] = false;
  TorchNormaliser esp = makeTorchNormaliser(OperatorRegistry::builtin().parse("esp"), 3, 6);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { esp->forward(in.q, in.k, in.v, false, in.mask); }, {"esp", "mask"}));
}

}  // namespace
}  // namespace tl
