#include "rankdecay/theory.h"

#include <algorithm>
#include <cmath>

namespace tl::rankdecay {

double clampedLog10(double value) {
  if (!(value > 0)) return -kLog10Clamp;
  return std::clamp(std::log10(value), -kLog10Clamp, kLog10Clamp);
}

std::vector<double> log10CubicRecursion(const std::vector<double>& log10c, double log10r0) {
  std::vector<double> out{log10r0};
  for (double logc : log10c) out.push_back(std::clamp(logc + 3 * out.back(), -kLog10Clamp, kLog10Clamp));
  return out;
}

double log10CubicClosedForm(double log10c, double log10r0, int layers) {
  // r_L = c^{(3^L−1)/2} r_0^{3^L} = c^{−1/2} (√c r_0)^{3^L}
  return -0.5 * log10c + std::pow(3.0, layers) * (0.5 * log10c + log10r0);
}

bool vacuous(double sqrtCr0) { return sqrtCr0 >= 1; }

namespace {

double beta(const LayerWeightNorms& layer) {
  double b = 0;
  for (size_t h = 0; h < layer.qk.size(); ++h) b = std::max(b, layer.qk[h] * layer.h[h]);
  return b;
}

// Rigorous weights-only recursion (spec 3.4.3), in log10: each factor is at most Σ_h ‖W_h‖₂.
std::vector<double> rigorous(const SampleTheoryInputs& in) {
  std::vector<double> out{clampedLog10(in.r0)};
  double r = in.r0;
  for (const LayerWeightNorms& layer : in.layers) {
    std::vector<double> a;
    for (double qk : layer.qk) a.push_back(qk * r * r / std::sqrt(double(in.headDim)));
    r = rigorousStep(r, a, layer.h);
    out.push_back(clampedLog10(r));
  }
  return out;
}

std::vector<double> withR0(double r0, const std::vector<double>& perLayer) {
  std::vector<double> out{clampedLog10(r0)};
  for (double bound : perLayer) out.push_back(clampedLog10(bound));
  return out;
}

}  // namespace

double rigorousStep(double r, const std::vector<double>& a, const std::vector<double>& normH) {
  double factor = 0;
  for (size_t h = 0; h < a.size(); ++h) factor += std::min(1.0, std::expm1(std::min(4 * a[h], 700.0))) * normH[h];
  return r * factor;
}

SampleBounds sampleBounds(const SampleTheoryInputs& in) {
  const double n = in.n, dqk = in.headDim;
  const double heads = in.layers.empty() ? 0 : double(in.layers[0].qk.size());
  std::vector<double> logcP, logcL;
  double maxBeta = 0;
  for (const LayerWeightNorms& layer : in.layers) {
    const double b = beta(layer);
    maxBeta = std::max(maxBeta, b);
    logcP.push_back(clampedLog10(b * heads / std::sqrt(n * n * n * dqk)));
    logcL.push_back(clampedLog10(b * heads / (n * std::sqrt(dqk))));
  }
  SampleBounds out;
  const double logr0 = clampedLog10(in.r0);
  out.printed = log10CubicRecursion(logcP, logr0);
  out.linearised = log10CubicRecursion(logcL, logr0);
  out.rigorous = rigorous(in);
  out.data = withR0(in.r0, in.dataBound);
  out.localRigorous = withR0(in.r0, in.localRigorousBound);
  out.printedSqrtCr0 = std::sqrt(maxBeta * heads / std::sqrt(n * n * n * dqk)) * in.r0;
  out.linearisedSqrtCr0 = std::sqrt(maxBeta * heads / (n * std::sqrt(dqk))) * in.r0;
  return out;
}

}  // namespace tl::rankdecay
