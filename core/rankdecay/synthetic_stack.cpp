#include "rankdecay/synthetic_stack.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "common/parallel.h"
#include "data/random.h"
#include "rankdecay/normaliser.h"
#include "rankdecay/residual.h"

namespace tl::rankdecay {

LayerNormPlace parseLayerNorm(const std::string& name) {
  if (name == "none") return LayerNormPlace::None;
  if (name == "pre") return LayerNormPlace::Pre;
  if (name == "post") return LayerNormPlace::Post;
  throw InvalidArgument("unknown ln '" + name + "'; expected none, pre or post");
}

void validate(const StackSpec& spec) {
  auto positive = [](int value, const char* name) {
    if (value < 1) throw InvalidArgument(std::string("stack: ") + name + " must be ≥ 1, got " + std::to_string(value));
  };
  positive(spec.n, "n");
  positive(spec.width, "d");
  positive(spec.heads, "H");
  positive(spec.layers, "L");
  if (spec.n < 2) throw InvalidArgument("stack: n must be ≥ 2 (rank decay needs two tokens)");
  if (spec.width % spec.heads != 0)
    throw InvalidArgument("stack: d = " + std::to_string(spec.width) + " is not a multiple of H = " +
                          std::to_string(spec.heads) + " (each head has d/H dimensions)");
  if (!(spec.scale > 0) || !std::isfinite(spec.scale)) throw InvalidArgument("stack: scale must be finite and > 0");
}

namespace {

struct LayerWeights {
  std::vector<MatD> WQ, WK, WV, WO;  // per head: width × dh, and W_O's rows of the head (dh × width)
  std::vector<MatD> Wh;              // per head: W_h = W_V,h W_O,h (width × width)
  MatD W1, W2;
};

MatD gaussian(SeededRandom& rng, int rows, int cols, double variance) {
  const double sd = std::sqrt(variance);
  MatD M(rows, cols);
  for (Eigen::Index i = 0; i < M.rows(); ++i)
    for (Eigen::Index j = 0; j < M.cols(); ++j) M(i, j) = sd * rng.normal();
  return M;
}

// `ffn`: whether the configuration uses the FFN; its weights are skipped in the stream otherwise.
LayerWeights drawLayer(SeededRandom& rng, const StackSpec& spec, bool ffn) {
  const int d = spec.width, dh = spec.width / spec.heads;
  LayerWeights w;
  for (int h = 0; h < spec.heads; ++h) {
    w.WQ.push_back(gaussian(rng, d, dh, 1.0 / d));
    w.WK.push_back(gaussian(rng, d, dh, 1.0 / d));
    w.WV.push_back(gaussian(rng, d, dh, 1.0 / d));
  }
  const MatD WO = gaussian(rng, spec.heads * dh, d, 1.0 / (spec.heads * dh));  // rows h·dh … (h+1)·dh − 1: head h
  for (int h = 0; h < spec.heads; ++h) {
    w.WO.push_back(WO.middleRows(h * dh, dh));
    w.Wh.push_back(w.WV[size_t(h)] * w.WO[size_t(h)]);
  }
  if (ffn) {
    w.W1 = gaussian(rng, d, 4 * d, 2.0 / d);
    w.W2 = gaussian(rng, 4 * d, d, 1.0 / (4 * d));
  } else {
    rng.skipNormals(uint64_t(2) * 4 * d * d);  // W1 and W2: the next layer's weights stay the same
  }
  return w;
}

// LayerNorm without learnable gain and bias, per token.
MatD layerNorm(const MatD& X) {
  MatD Y = X.colwise() - X.rowwise().mean();
  const VecD inverseStd = ((Y.array().square().rowwise().mean()) + 1e-5).rsqrt();
  return inverseStd.asDiagonal() * Y;
}

MatD ffn(const MatD& X, const LayerWeights& w) { return (X * w.W1).cwiseMax(0.0) * w.W2; }

double scoreFactor(const Operator& op, double scale) {
  const auto eps = op.params().find("eps");
  if (eps == op.params().end()) return scale;
  return scale / std::get<double>(eps->second);
}

// Exact one-step data bound of one pure-SAN layer (spec 3.4.4) from its input X (residual norm r) and head
// plans; normH[h] = ‖W_h‖₂.
double dataBound(const MatD& X, double r, const std::vector<MatD>& plans, const LayerWeights& w,
                 const std::vector<double>& normH) {
  const VecD mean = X.colwise().mean().transpose();
  double bound = 0;
  for (size_t h = 0; h < plans.size(); ++h) {
    const VecD e = plans[h].rowwise().sum().array() - 1.0;
    const double centredError = (e.array() - e.mean()).matrix().norm();
    bound += spectralNorm(projectZeroMarginals(plans[h])) * r * normH[h] +
             centredError * (w.Wh[h].transpose() * mean).norm();
  }
  return bound;
}

// Per head a_h = max_ij |A_h,ij| of the centred scores A_h = R W_QK,h Rᵀ/√d_qk (times the score factor),
// R = res(X): the local size of the scores the linearisation and the local rigorous bound need.
std::vector<double> centredScoreMaxima(const MatD& X, const LayerWeights& w, double factor) {
  const MatD R = meanResidual(X);
  std::vector<double> maxima;
  for (size_t h = 0; h < w.WQ.size(); ++h) {
    const MatD A = (R * w.WQ[h]) * (R * w.WK[h]).transpose() * (factor / std::sqrt(double(w.WQ[h].cols())));
    maxima.push_back(A.cwiseAbs().maxCoeff());
  }
  return maxima;
}

struct SampleRun {
  std::vector<MatD> outputs;
  std::vector<std::vector<NormalisedAttention>> attention;  // [layer][head]
  SampleTheoryInputs theory;
};

SampleRun runSample(const Operator& op, const StackSpec& spec, uint64_t seed, Feedback& feedback) {
  SeededRandom rng(seed);
  const MatD mu = gaussian(rng, 1, spec.width, 4.0);
  MatD X = gaussian(rng, spec.n, spec.width, 1.0).rowwise() + mu.row(0);
  std::vector<LayerWeights> weights;
  const BlockSwitches sw = switchesFor(spec.config, spec.skipScope);
  for (int l = 0; l < spec.layers; ++l) weights.push_back(drawLayer(rng, spec, sw.ffn));

  const bool pre = spec.layerNorm == LayerNormPlace::Pre, post = spec.layerNorm == LayerNormPlace::Post;
  const bool pureSan = spec.config == BlockConfig::San && spec.layerNorm == LayerNormPlace::None;
  const double factor = scoreFactor(op, spec.scale);

  SampleRun run;
  run.theory.n = spec.n;
  run.theory.headDim = spec.width / spec.heads;
  run.theory.r0 = spectralNorm(meanResidual(X));
  run.outputs.push_back(X);
  for (const LayerWeights& w : weights) {
    const MatD Z = pre ? layerNorm(X) : X;
    LayerWeightNorms norms;
    std::vector<MatD> plans;
    MatD attention = MatD::Zero(X.rows(), X.cols());
    run.attention.emplace_back();
    for (size_t h = 0; h < w.WQ.size(); ++h) {
      NormalisedAttention a = normalise(op, factor * (Z * w.WQ[h]), Z * w.WK[h], feedback);
      attention += a.plan * Z * w.Wh[h];
      if (pureSan) {
        norms.qk.push_back(factor * spectralNormOfProduct(w.WQ[h], w.WK[h].transpose()));
        norms.h.push_back(spectralNormOfProduct(w.WV[h], w.WO[h]));
        plans.push_back(a.plan);
      }
      run.attention.back().push_back(std::move(a));
    }
    if (pureSan) {  // the theory covers this setting only; elsewhere its inputs would cost SVDs for nothing
      const double r = spectralNorm(meanResidual(X));
      const std::vector<double> scoreMaxima = centredScoreMaxima(Z, w, factor);
      run.theory.maxCentredScore.push_back(*std::max_element(scoreMaxima.begin(), scoreMaxima.end()));
      run.theory.dataBound.push_back(dataBound(X, r, plans, w, norms.h));
      run.theory.localRigorousBound.push_back(rigorousStep(r, scoreMaxima, norms.h));
      run.theory.layers.push_back(norms);
    }

    MatD X1 = sw.attentionSkip ? MatD(X + attention) : attention;
    if (post) X1 = layerNorm(X1);
    MatD X2 = X1;
    if (sw.ffn) {
      const MatD F = ffn(pre ? layerNorm(X1) : X1, w);
      X2 = sw.ffnSkip ? MatD(X1 + F) : F;
      if (post) X2 = layerNorm(X2);
    }
    X = X2;
    run.outputs.push_back(X);
  }
  return run;
}

}  // namespace

StackRun runSyntheticStack(const Operator& op, const StackSpec& spec, uint64_t seed, int seeds, Feedback& feedback) {
  validate(spec);
  if (seeds < 1) throw InvalidArgument("stack: seeds must be ≥ 1");
  // Each network draws from its own seed and fills its own slot, so the networks run in parallel and the
  // result does not depend on the thread count. The operators' own per-iteration progress is dropped: the
  // count of finished networks is the progress.
  Feedback quiet(feedback, {});
  std::vector<SampleRun> samples(static_cast<size_t>(seeds));
  std::atomic<int> finished{0};
  feedback.setProgress(0, "networks 0/" + std::to_string(seeds));
  parallelForEach(seeds, [&](Eigen::Index b) {
    quiet.throwIfCanceled();
    samples[size_t(b)] = runSample(op, spec, seed + uint64_t(b), quiet);
    const int done = ++finished;
    feedback.setProgress(double(done) / seeds, "networks " + std::to_string(done) + "/" + std::to_string(seeds));
  });

  StackRun out;
  out.record = AttentionRecord::sized(spec.layers, seeds, spec.heads);
  for (int b = 0; b < seeds; ++b) {
    SampleRun& sample = samples[size_t(b)];
    for (int l = 0; l < spec.layers; ++l)
      for (int h = 0; h < spec.heads; ++h) {
        NormalisedAttention& a = sample.attention[size_t(l)][size_t(h)];
        out.record.attention[out.record.index(l, b, h)] = std::move(a.plan);
        out.record.errors[out.record.index(l, b, h)] = a.errors;
      }
    out.record.outputs[size_t(b)] = std::move(sample.outputs);
    out.theory.push_back(std::move(sample.theory));
  }
  return out;
}

}  // namespace tl::rankdecay
