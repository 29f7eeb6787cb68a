#pragma once
// The host side of a banded Sinkhorn run (banded_cuda.h): device buffers, the centred base and raw tail as a
// sequence of band half-steps (band_kernels.h) closed by the dense CloseHalfStepKernel, the output, the final
// sums, and the downloads. A template over the device like dense_run.h: the GPU (CudaDevice, banded.cu) and,
// kernel body by kernel body, the CPU (SimDevice in tests/core/cuda).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cuda/band_kernels.h"
#include "cuda/banded_cuda.h"
#include "cuda/cuda_error.h"
#include "cuda/launch_config.h"
#include "cuda/run_transfers.h"

namespace tl::cuda {

// Padded sizes of a banded run (pure).
struct BandLayout : OperandLayout {
  long long W = 0;  // the band half-width
  int steps = 0;   // single normalisations: 2·(base + tail)
  int passes = 0;  // half-steps run: steps, plus one for the last plan's errors
};

inline BandLayout bandLayout(const AttentionProblem& p, long long W, int steps, bool errors) {
  BandLayout L;
  static_cast<OperandLayout&>(L) = operandLayout(p);
  L.W = W;
  L.steps = steps;
  L.passes = steps + (errors ? 1 : 0);
  return L;
}

// Everything a banded run allocates (checked against the free memory before the first allocation).
inline MemoryEstimate bandMemory(const BandLayout& L, const AttentionProblem& p, const CudaOptions& options,
                                 bool band) {
  const double b = L.batch, f = sizeof(float);
  MemoryEstimate e;
  addOperandMemory(e, L, p);
  const double states = 2.0 * (std::max(L.ldQ, L.ldK) + L.ldK);  // half-steps' and the final column pass's
  e.items.push_back({"potentials and LSE states", b * (double(L.ldQ + L.ldK) + states) * f + 3.0 * (L.nq + L.nk) * f});
  addLoopResultMemory(e, L, L.steps, options);
  if (band) e.items.push_back({"band of scores", b * double(L.nq) * double(2 * L.W + 1) * f});
  return e;
}

template <class Dev>
class BandRun {
  template <class T>
  using Buffer = typename Dev::template Buffer<T>;

 public:
  // `steps` = 0 for a run that only forms the band of scores.
  BandRun(Dev& dev, const AttentionProblem& problem, long long W, double eps, int steps, const CudaOptions& options)
      : dev_(dev),
        p_(problem),
        options_(options),
        eps_(eps),
        L_(bandLayout(problem, W, steps, steps > 0 && options.errors)),
        scoreScale_(float(1.0 / (std::sqrt(double(problem.d)) * eps))) {}

  // Checks the memory and converts q and k (and v for a loop) into padded float32 operands.
  void upload(bool band) {
    requireDeviceMemory(dev_, bandMemory(L_, p_, options_, band),
                        band ? "banded band of scores" : "banded fused output path", L_.batch, L_.nq, L_.nk);
    DeviceOperands<Dev> operands = uploadOperands(dev_, p_, L_, L_.dv && L_.steps, false, "banded");
    qT_ = std::move(operands.qT);
    kT_ = std::move(operands.kT);
    v_ = std::move(operands.v);
  }

  // The band of scores (after upload(true)).
  std::vector<float> bandScores() {
    Buffer<float> band = dev_.template alloc<float>(size_t(L_.batch) * L_.nq * size_t(2 * L_.W + 1), "band of scores");
    BandScoresKernel::Params a{qT_.data(), kT_.data(), L_.batch, L_.nq, L_.nk, int(L_.dPad), L_.ldQ, L_.ldK, L_.W,
                               scoreScale_, band.data()};
    dev_.template launch<BandScoresKernel>("BandScoresKernel", BandScoresKernel::grid(a), a);
    dev_.finish();
    return downloadVector(dev_, band);
  }

  // The loop's buffers (after upload(false)); `baseSteps` of the budget are centred.
  void prepare(int baseSteps) {
    baseSteps_ = baseSteps;
    logMu_ = uploadVector(dev_, p_.logMu, "marginals");
    logNu_ = uploadVector(dev_, p_.logNu, "marginals");
    targetMu_ = uploadVector(dev_, marginalTargets(p_.logMu, p_.scale), "marginal targets");
    targetNu_ = uploadVector(dev_, marginalTargets(p_.logNu, p_.scale), "marginal targets");
    ut_ = dev_.template alloc<float>(size_t(L_.batch * L_.ldQ), "potentials");
    vt_ = dev_.template alloc<float>(size_t(L_.batch * L_.ldK), "potentials");
    // Both sides' half-steps write their states here; the final column pass keeps its own.
    states_ = dev_.template alloc<float>(size_t(L_.batch * std::max(L_.ldQ, L_.ldK) * 2), "LSE states");
    colStates_ = dev_.template alloc<float>(size_t(L_.batch * L_.ldK * 2), "LSE states");
    if (options_.histories) {
      uHistory_ = dev_.template alloc<float>(size_t(L_.batch) * L_.steps * L_.nq, "dual histories");
      vHistory_ = dev_.template alloc<float>(size_t(L_.batch) * L_.steps * L_.nk, "dual histories");
    }
    if (options_.errors) errors_ = dev_.template alloc<double>(size_t(L_.batch) * L_.steps * 4, "errors");
    shifts_ = dev_.template alloc<float>(size_t(L_.batch) * shiftCount(), "centring shifts");
    if (L_.dv) output_ = dev_.template alloc<float>(size_t(L_.batch) * L_.nq * L_.dv, "output");
  }

  // Device work only (repeatable: every call starts from scratch): base and tail, the output, and one more
  // band pass each way for the final plan's sums (rows into states_, columns into colStates_).
  void solve() {
    initPotential(dev_, L_.batch, logMu_, L_.nq, L_.ldQ, ut_);
    initPotential(dev_, L_.batch, logNu_, L_.nk, L_.ldK, vt_);
    for (int t = 1; t <= L_.passes; ++t) {
      halfStep(t);
      // Full step t/2 of the stopped base ends centred (core/ops/sinkhorn/sinkhorn_loop.h centredFullSteps).
      if (t % 2 == 0 && t <= L_.steps && t / 2 <= baseSteps_) {
        BandCentreKernel::Params c{ut_.data(), vt_.data(), L_.nq, L_.nk, L_.ldQ, L_.ldK, shifts_.data(),
                                   shiftCount(), t / 2 - 1};
        dev_.template launch<BandCentreKernel>("BandCentreKernel", BandCentreKernel::grid(L_.batch), c);
      }
      dev_.afterHalfStep(options_.canceled);
    }
    if (L_.dv) {
      const PlanTileParams tile{qT_.data(), kT_.data(), ut_.data(), vt_.data(), L_.batch, L_.nq, L_.nk,
                                int(L_.dPad), L_.ldQ, L_.ldK, scoreScale_, p_.scale};
      BandApplyKernel::Params a{tile, L_.W, v_.data(), L_.dv, int(L_.dvPad), output_.data()};
      dev_.template launch<BandApplyKernel>("BandApplyKernel", BandApplyKernel::grid(a), a);
    }
    bandLse(true, states_);
    bandLse(false, colStates_);
  }

  // Waits for the device, reports any failure, and downloads the results.
  BandedCudaResult collect() {
    dev_.finish();
    BandedCudaResult r;
    r.rowSums = finalSums(true);
    r.colSums = finalSums(false);
    collectDuals(r);
    if (L_.dv) r.output = downloadVector(dev_, output_);
    return r;
  }

 private:
  // Half-step t (1-based): odd t normalises rows, even t columns; t = steps + 1 only records the last plan's
  // errors on its open side.
  void halfStep(int t) {
    const bool rows = t % 2 == 1;
    bandLse(rows, states_);
    const bool errors = errors_.size() > 0;
    Buffer<float>& history = rows ? uHistory_ : vHistory_;
    CloseHalfStepKernel::Params c{states_.data(),
                                  1,
                                  L_.batch,
                                  rows ? L_.nq : L_.nk,
                                  rows ? L_.ldQ : L_.ldK,
                                  rows ? logMu_.data() : logNu_.data(),
                                  rows ? targetMu_.data() : targetNu_.data(),
                                  rows ? ut_.data() : vt_.data(),
                                  float(eps_),
                                  p_.scale,
                                  history.size() ? history.data() : nullptr,
                                  errors ? errors_.data() : nullptr,
                                  L_.steps,
                                  t,
                                  rows ? 0 : 2,
                                  t <= L_.steps ? 1 : 0,
                                  errors && t > 1 ? 1 : 0};
    dev_.template launch<CloseHalfStepKernel>("CloseHalfStepKernel", CloseHalfStepKernel::grid(c), c);
  }

  int shiftCount() const { return std::max(baseSteps_, 1); }

  // One side's LSE over the band into `states` ([batch][ld][2]).
  void bandLse(bool rows, Buffer<float>& states) {
    BandLseKernel::Params a{rows ? qT_.data() : kT_.data(),
                            rows ? kT_.data() : qT_.data(),
                            rows ? vt_.data() : ut_.data(),
                            states.data(),
                            L_.batch,
                            int(L_.dPad),
                            rows ? L_.nk : L_.nq,
                            rows ? L_.ldQ : L_.ldK,
                            rows ? L_.ldK : L_.ldQ,
                            L_.W,
                            scoreScale_};
    dev_.template launch<BandLseKernel>("BandLseKernel", BandLseKernel::grid(a, rows ? L_.nq : L_.nk), a);
  }

  // The final plan's sums on one side, scale·exp(potential + LSE over the other side), from solve's last passes.
  std::vector<float> finalSums(bool rows) {
    const int n = rows ? L_.nq : L_.nk;
    const long long ld = rows ? L_.ldQ : L_.ldK;
    const std::vector<float> states = downloadVector(dev_, rows ? states_ : colStates_);
    const std::vector<float> potential = downloadVector(dev_, rows ? ut_ : vt_);
    std::vector<float> sums(size_t(L_.batch) * n);
    for (long long b = 0; b < L_.batch; ++b)
      for (long long i = 0; i < n; ++i) {
        const float* st = &states[size_t((b * ld + i) * 2)];
        sums[size_t(b * n + i)] = marginalSum(potential[size_t(b * ld + i)], OnlineLse{st[0], st[1]}.finalize(), p_.scale);
      }
    return sums;
  }

  // Duals, histories and errors. The device keeps the centred potentials; the written duals are the raw ones
  // (ut + G, vt − G) with G the centring shifts so far, as core/ops/sinkhorn/sinkhorn_loop.h writes them.
  void collectDuals(BandedCudaResult& r) {
    r.steps = L_.steps;
    const std::vector<float> shifts = downloadVector(dev_, shifts_);
    const int count = shiftCount(), baseSteps = baseSteps_;
    // gauge[b][t]: the accumulated shift after single normalisation t (0 before any).
    std::vector<float> gauge(size_t(L_.batch) * (L_.steps + 1), 0.f);
    for (long long b = 0; b < L_.batch; ++b)
      for (int t = 1; t <= L_.steps; ++t) {
        float& g = gauge[size_t(b * (L_.steps + 1) + t)];
        g = gauge[size_t(b * (L_.steps + 1) + t - 1)];
        if (t % 2 == 0 && t / 2 <= baseSteps) g += shifts[size_t(b * count + t / 2 - 1)];
      }
    const auto gaugeAfter = [&](long long b, int t) { return gauge[size_t(b * (L_.steps + 1) + t)]; };
    r.u = rawDuals(ut_, L_.nq, L_.ldQ, gaugeAfter, +1.f);
    r.v = rawDuals(vt_, L_.nk, L_.ldK, gaugeAfter, -1.f);
    if (uHistory_.size()) {
      // The close kernel wrote each side's row at its own half-step, in the gauge before that step's centring.
      r.uHistory = downloadVector(dev_, uHistory_);
      r.vHistory = downloadVector(dev_, vHistory_);
      for (long long b = 0; b < L_.batch; ++b)
        for (int t = 1; t <= L_.steps; ++t) {
          const bool rows = t % 2 == 1;
          const int n = rows ? L_.nq : L_.nk;
          float* own = (rows ? r.uHistory.data() + (b * L_.steps + t - 1) * L_.nq
                             : r.vHistory.data() + (b * L_.steps + t - 1) * L_.nk);
          const float g = float(eps_) * gaugeAfter(b, t - 1);
          for (int i = 0; i < n; ++i) own[i] = rows ? own[i] + g : own[i] - g;
        }
      // The other side did not move: its raw value repeats (row 0 of v: the start, 0 or −inf).
      fillUnchangedHistoryRows(r, L_.batch, L_.steps, L_.nq, L_.nk,
                               [&](long long, int j) { return isNegInf(p_.logNu[size_t(j)]) ? negInf() : 0.f; });
    }
    if (errors_.size()) r.errorHistory = stepErrors(downloadVector(dev_, errors_));
  }

  template <class Gauge>
  std::vector<float> rawDuals(const Buffer<float>& potential, int n, long long ld, const Gauge& gaugeAfter,
                              float sign) {
    const std::vector<float> padded = downloadVector(dev_, potential);
    std::vector<float> out(size_t(L_.batch) * n);
    const float eps = float(eps_);
    for (long long b = 0; b < L_.batch; ++b)
      for (long long i = 0; i < n; ++i)
        out[size_t(b * n + i)] = eps * (padded[size_t(b * ld + i)] + sign * gaugeAfter(b, L_.steps));
    return out;
  }

  Dev& dev_;
  const AttentionProblem& p_;
  CudaOptions options_;
  double eps_;
  BandLayout L_;
  float scoreScale_;
  int baseSteps_ = 0;
  Buffer<float> qT_, kT_, v_, logMu_, logNu_, targetMu_, targetNu_, ut_, vt_, states_, colStates_, shifts_, output_;
  Buffer<float> uHistory_, vHistory_;
  Buffer<double> errors_;
};

// The runs behind banded_cuda.h, for any device; the caller validates the request first.
template <class Dev>
BandedCudaResult runBanded(Dev& dev, const AttentionProblem& problem, const BandedCudaParams& params,
                           const CudaOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  BandRun<Dev> run(dev, problem, params.W, params.eps, params.budget(), options);
  run.upload(false);
  run.prepare(params.baseSteps);
  run.solve();
  BandedCudaResult result = run.collect();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

template <class Dev>
std::vector<float> runBandScores(Dev& dev, const AttentionProblem& problem, long long W, double eps) {
  BandRun<Dev> run(dev, problem, W, eps, 0, CudaOptions{});
  run.upload(true);
  return run.bandScores();
}

}  // namespace tl::cuda
