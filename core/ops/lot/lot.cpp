#include "ops/lot/lot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "io/npy_cache.h"
#include "ops/family.h"
#include "ops/log_domain.h"
#include "ops/lot/lot_coupling.h"
#include "ops/lot/lot_steps.h"
#include "ops/lot/low_rank_plan.h"
#include "ops/subsequence.h"

#include "ops/lot/lot_device.h"

namespace tl {
namespace {

// Ranges through the schema (docs/operators/lot.md#parameters); then the combinations it cannot express.
void validateParams(const LotParams& p) {
  lotParamBindings().check(p, "lot");
  const PivotInit init = resolvedPivotInit(p);
  if (init == PivotInit::File && p.pivots.size() == 0)
    throw InvalidArgument("lot: pivot_init=file needs pivots=PATH.npy (an r×d array of pivot locations)");
  if (init != PivotInit::File && p.pivots.size() != 0)
    throw InvalidArgument(std::string("lot: pivots are given but pivot_init=") + pivotInitName(p.pivotInit) +
                          "; set pivot_init=file (or auto) to use them, or leave pivots out");
}

// The pivots and both problems on an input without padding, on the CPU.
template <class T>
std::pair<LotPivots, LotCoupling<T>> lotCouplingOnValid(const AttentionInput<T>& valid, const LotParams& p,
                                                        bool trackErrors, Feedback& feedback) {
  LotPivots pivots = lotPivotsFor(valid, p, feedback);
  LotCoupling<T> c = solveLotCoupling<T>(valid.Q, valid.K, pivots.locations.template cast<T>(),
                                         logPivotMasses<T>(pivots.massLogits, p.massTemp), p.eps, p.T, trackErrors,
                                         feedback);
  return {std::move(pivots), std::move(c)};
}

template <class T>
PlanResult<T> lotOnValid(const AttentionInput<T>& valid, const LotParams& p, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const auto [pivots, c] = lotCouplingOnValid(valid, p, /*trackErrors=*/true, feedback);
  PlanResult<T> r = lotResult(c, pivots, valid.V ? std::optional<Mat<T>>(c.apply(*valid.V)) : std::nullopt);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

template <class T>
LotPivots lotPivotsFor(const AttentionInput<T>& valid, const LotParams& p, Feedback& feedback) {
  const int n = std::min(valid.nQueries(), valid.nKeys());
  if (p.r > n)
    throw InvalidArgument("lot: r = " + std::to_string(p.r) + " pivots exceed n = " + std::to_string(n) +
                          " (valid) tokens; choose r <= " + std::to_string(n));
  LotPivots pivots;
  switch (resolvedPivotInit(p)) {
    case PivotInit::Auto:  // resolvedPivotInit never returns Auto
    case PivotInit::File:
      pivots.locations = p.pivots;
      pivots.massLogits = VecD::Zero(p.r);
      break;
    case PivotInit::Gaussian:
      pivots = gaussianPivots(p.r, valid.headDim(), p.seed);
      break;
    case PivotInit::KMeans: {
      MatD points(valid.Q.rows() + valid.K.rows(), valid.headDim());
      points << valid.Q.template cast<double>(), valid.K.template cast<double>();
      pivots.locations = kmeansCentres(points, p.r, p.seed, feedback);
      pivots.massLogits = VecD::Zero(p.r);
      break;
    }
  }
  if (p.massLogits.size() != 0) pivots.massLogits = p.massLogits;
  validatePivots(pivots, p.r, valid.headDim());
  return pivots;
}

template <class T>
PlanResult<T> lotResult(const LotCoupling<T>& c, const LotPivots& pivots, std::optional<Mat<T>> output) {
  // The plan stays factored (low_rank_plan.h): nothing n×n unless a view asks.
  PlanResult<T> r;
  r.plan = Plan<T>(std::make_shared<const LowRankPlan<T>>(c));
  r.output = std::move(output);
  r.errorHistory = c.errorHistory;
  r.errors = c.errorHistory.back();
  r.rowTarget = c.rowTarget();
  r.colTarget = c.colTarget();
  r.extras["lot_P1"] = c.P1;
  r.extras["lot_P2"] = c.P2;
  r.extras["lot_pivot_masses"] = c.logw.array().exp().matrix();
  r.extras["lot_pivots"] = pivots.locations.template cast<T>();
  r.extras["lot_u1"] = c.u1;
  r.extras["lot_v1"] = c.v1;
  r.extras["lot_u2"] = c.u2;
  r.extras["lot_v2"] = c.v2;
  return r;
}

template <class T>
void padLotExtras(PlanResult<T>& r, const Mask& mask) {
  const auto idx = validIndices(mask);
  const Eigen::Index n = mask.size();
  for (const char* name : {"lot_P1", "lot_u1", "lot_v2"}) r.extras[name] = scatterRows<T>(r.extras[name], idx, n);
  r.extras["lot_P2"] = scatterRows<T>(r.extras["lot_P2"].transpose(), idx, n).transpose();
}


const ParamBindings<LotParams>& lotParamBindings() {
  static const ParamBindings<LotParams> bindings = [] {
    ParamBindings<LotParams> b;
    b.field(intParam("r", 1, 4096, 32,
                     "number of pivots, the rank of A (at most the number of tokens n); a pivots file sets it to its "
                     "rows",
                     128),
            &LotParams::r);
    b.field(positiveParam("eps", 1.0, "temperature dividing the scores of both problems: kernel exp(S/eps)"),
            &LotParams::eps);
    b.field(intParam("T", 1, 100000, 5,
                     "budget of each of the two problems: single normalisations, rows first (odd T: rows of A exact; "
                     "even T: columns exact)",
                     500),
            &LotParams::T);
    b.field(positiveParam("mass_temp", 0.5, "temperature dividing the pivot mass logits: w = softmax(logits/mass_temp)"),
            &LotParams::massTemp);
    b.parsed(choiceParam("pivot_init", {"auto", "kmeans", "gaussian", "file"},
                         "pivot locations: auto = the pivots file when given, else kmeans; kmeans = k-means centres "
                         "of queries and keys (uniform masses); gaussian = N(0, 1/d) locations and N(0, 0.25) logits "
                         "from seed; file = the pivots file"),
             &LotParams::pivotInit, parsePivotInit, pivotInitName);
    // The pivots file fixes r (its rows); mass_logits is bound after it, so it is checked against that r.
    b.custom(pathParam("pivots", "r×d .npy of pivot locations (pivot_init=auto or file)"),
             [](LotParams& p, const ParamValue& path) {
               const std::string& file = std::get<std::string>(path);
               p.r = int(readNpyMatrixCached(file).rows());
               p.pivots = readPivotLocations(file, p.r);
             });
    b.custom(pathParam("mass_logits", "length-r .npy of pivot mass logits (replaces those of pivot_init)"),
             [](LotParams& p, const ParamValue& path) { p.massLogits = readMassLogits(std::get<std::string>(path), p.r); });
    b.field(intParam("seed", 0, 2147483647, 0, "seed of the k-means++ seeding or of the Gaussian pivots", 1000),
            &LotParams::seed);
    bindMaskMode(b, false);
    return b;
  }();
  return bindings;
}

LotParams::LotParams() { lotParamBindings().fillDefaults(*this); }

LotParams LotParams::from(const ParamSet& resolved) {
  LotParams p = lotParamBindings().fill(resolved);
  validateParams(p);
  return p;
}

PivotInit resolvedPivotInit(const LotParams& params) {
  if (params.pivotInit != PivotInit::Auto) return params.pivotInit;
  return params.pivots.size() ? PivotInit::File : PivotInit::KMeans;
}

template <class T>
PlanResult<T> lotAttention(const AttentionInput<T>& input, const LotParams& params, Feedback& feedback) {
  validateParams(params);
  validateInput(input);
  PlanResult<T> r = runOnValidSubsequence<T>(
      input, [&](const AttentionInput<T>& valid) { return lotOnValid(valid, params, feedback); });
  if (input.mask && !input.mask->all()) padLotExtras(r, *input.mask);
  return r;
}

template <class T>
Mat<T> lotOutput(const AttentionInput<T>& input, const LotParams& params, Feedback& feedback) {
  if (!input.V) throw InvalidArgument("lot: the lazy output O = A·V needs values V");
  if (input.mask && !input.mask->all()) return *lotAttention(input, params, feedback).output;
  // Unpadded: lotAttention's output without the error history (both plans formed after every step: twice the
  // exponentials of the normalisations themselves), the plan object and the extras that the views read.
  validateParams(params);
  validateInput(input);
  return lotCouplingOnValid(input, params, /*trackErrors=*/false, feedback).second.apply(*input.V);
}

template PlanResult<float> lotAttention(const AttentionInput<float>&, const LotParams&, Feedback&);
template PlanResult<double> lotAttention(const AttentionInput<double>&, const LotParams&, Feedback&);
template Mat<float> lotOutput(const AttentionInput<float>&, const LotParams&, Feedback&);
template LotPivots lotPivotsFor(const AttentionInput<float>&, const LotParams&, Feedback&);
template LotPivots lotPivotsFor(const AttentionInput<double>&, const LotParams&, Feedback&);
template PlanResult<float> lotResult(const LotCoupling<float>&, const LotPivots&, std::optional<MatF>);
template PlanResult<double> lotResult(const LotCoupling<double>&, const LotPivots&, std::optional<MatD>);
template void padLotExtras(PlanResult<float>&, const Mask&);
template void padLotExtras(PlanResult<double>&, const Mask&);
template Mat<double> lotOutput(const AttentionInput<double>&, const LotParams&, Feedback&);

void registerLot(OperatorRegistry& registry) {
  CudaPath<LotParams> cuda;
  // The factors are n × r each way, so a dense request changes nothing on the device.
  cuda.run = [](const AttentionBatch<float>& heads, const LotParams& p, const DeviceRequest&,
                const DenseKernels& kernels, Feedback& feedback) { return lotOnDevice(heads, p, kernels, feedback); };
  registry.add(familyInfo<LotParams>(
      {{"lot", "LOT", "low-rank doubly stochastic attention through r pivots (two entropic problems, glued)"},
       lotParamBindings(),
       {Backend::Torch},
       [](const LotParams&) { return true; },
       cuda},
      [](const auto& input, const LotParams& p, Feedback& f) { return lotAttention(input, p, f); },
      [](const auto& input, const LotParams& p, Feedback& f) { return lotOutput(input, p, f); }));
}

}  // namespace tl
