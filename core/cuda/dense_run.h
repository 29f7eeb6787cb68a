#pragma once
// The host side of a dense softmax/Sinkhorn run: device buffers, the duals loop of core/ops/sinkhorn/sinkhorn_loop.h
// as a sequence of kernel launches, the optional outputs, and the downloads. Written once as a template over
// the device so that the same orchestration runs on the GPU (CudaDevice, cuda_device.cuh; instantiated in
// dense_run.cu) and, kernel body by kernel body, on the CPU (SimDevice in tests/core/cuda).
//
// A Dev provides: Buffer<T> (movable, data(), size()); alloc<T>(count, what); upload(buffer, src, count);
// download(dst, buffer, count); launch<Kernel>(name, Grid, params); afterHalfStep(canceled) (bounds the work in
// flight, polls cancellation, throws tl::Canceled); finish() (waits, reports asynchronous failures);
// freeBytes(); limits().
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "cuda/attention_problem.h"
#include "cuda/cuda_error.h"
#include "cuda/kernel_sets.h"
#include "cuda/launch_config.h"
#include "cuda/run_transfers.h"
#include "cuda/sinkhorn_cuda.h"

namespace tl::cuda {

// What one dense run computes.
struct DenseRunSpec {
  std::string family = "Sinkhorn";  // for messages
  int T = 1;                        // budget: single normalisations, rows first (T = 1 is softmax)
  double eps = 1.0;
  // Softmax (T = 1): the first half-step and O = A·V in one pass (FlashSoftmaxKernel) when v is given.
  bool flashSoftmax = false;
  // Given duals in score coordinates ([batch][nq], [batch][nk]) instead of the loop: output, plan, tiles.
  const std::vector<float>* givenU = nullptr;
  const std::vector<float>* givenV = nullptr;
  // The loop's column duals before the first half-step (score coordinates, [batch][nk]); null: 0.
  const std::vector<float>* initialV = nullptr;
};

// Padded sizes and launch choices of a run, from the problem, the request and the device (pure).
struct DenseLayout : OperandLayout {
  int rowSplits = 1, colSplits = 1;                 // key splits of row and column half-steps
  bool loop = true;                                 // run the duals loop (false: given duals)
  int steps = 0;                                    // T (0 with given duals)
  int passes = 0;                                   // half-steps run: T, plus one for the last plan's errors
  int tileRows = 0, tileCols = 0, cellsPerGroup = 1;  // display grid rows' × cols' (0 × 0: none)
};

inline DenseLayout denseLayout(const AttentionProblem& p, const DenseRunSpec& spec, const CudaOptions& options,
                               const DeviceLimits& limits) {
  DenseLayout L;
  static_cast<OperandLayout&>(L) = operandLayout(p);
  using Lse = LsePartialKernel;  // both kernel sets use 128 × 128 LSE tiles (LsePartialKernelT asserts it)
  L.rowSplits = chooseKeySplits(p.batch * ceilDiv(p.nq, Lse::BM), L.ldK / Lse::BN, limits);
  L.colSplits = chooseKeySplits(p.batch * ceilDiv(p.nk, Lse::BM), L.ldQ / Lse::BN, limits);
  L.loop = spec.givenU == nullptr;
  L.steps = L.loop ? spec.T : 0;
  L.passes = L.loop ? spec.T + (options.errors ? 1 : 0) : 0;
  if (options.tileRows > 0 && options.tileCols > 0) {
    L.tileRows = int(displayBlocks(p.nq, options.tileRows));
    L.tileCols = int(displayBlocks(p.nk, options.tileCols));
    L.cellsPerGroup =
        chooseDisplayCellsPerGroup(p.batch, L.tileRows, L.tileCols, DisplayKernel::kMaxCellsPerBlock, limits);
  }
  return L;
}

// Everything a run allocates on the device (checked against the free memory before the first allocation).
inline MemoryEstimate denseMemory(const DenseLayout& L, const AttentionProblem& p, const CudaOptions& options) {
  const double b = L.batch, f = sizeof(float);
  MemoryEstimate e;
  addOperandMemory(e, L, p);
  const double states = std::max(double(L.rowSplits) * L.ldQ, double(L.colSplits) * L.ldK) * b * 2 * f;
  e.items.push_back({"potentials and LSE states", b * double(L.ldQ + L.ldK) * f + states + 3.0 * (L.nq + L.nk) * f});
  addLoopResultMemory(e, L, L.steps, options);
  if (options.plan) e.items.push_back({"dense plan", b * double(L.nq) * double(L.nk) * f});
  if (L.tileRows) e.items.push_back({"display tiles", b * double(L.tileRows) * L.tileCols * 2 * f});
  return e;
}

template <class Dev>
class DenseRun {
  template <class T>
  using Buffer = typename Dev::template Buffer<T>;

 public:
  DenseRun(Dev& dev, const AttentionProblem& problem, const DenseRunSpec& spec, const CudaOptions& options)
      : dev_(dev),
        p_(problem),
        spec_(spec),
        options_(options),
        L_(denseLayout(problem, spec, options, dev.limits())),
        scoreScale_(float(1.0 / (std::sqrt(double(problem.d)) * spec.eps))) {}

  const DenseLayout& layout() const { return L_; }

  // Checks the memory, converts the inputs into padded float32 operands, uploads marginals and targets.
  void upload() {
    requireDeviceMemory(dev_, denseMemory(L_, p_, options_), pathName(), L_.batch, L_.nq, L_.nk);

    DeviceOperands<Dev> operands = uploadOperands(dev_, p_, L_, L_.dv > 0, options_.tf32, spec_.family);
    qT_ = std::move(operands.qT);
    kT_ = std::move(operands.kT);
    v_ = std::move(operands.v);

    logMu_ = uploadVector(dev_, p_.logMu, "marginals");
    logNu_ = uploadVector(dev_, p_.logNu, "marginals");
    targetMu_ = uploadVector(dev_, marginalTargets(p_.logMu, p_.scale), "marginal targets");
    targetNu_ = uploadVector(dev_, marginalTargets(p_.logNu, p_.scale), "marginal targets");
    ut_ = dev_.template alloc<float>(size_t(L_.batch * L_.ldQ), "potentials");
    vt_ = dev_.template alloc<float>(size_t(L_.batch * L_.ldK), "potentials");
    const long long stateRows = std::max(L_.rowSplits * L_.ldQ, L_.colSplits * L_.ldK);
    states_ = dev_.template alloc<float>(size_t(stateRows * L_.batch * 2), "LSE states");
    if (options_.histories && L_.steps) {
      uHistory_ = dev_.template alloc<float>(size_t(L_.batch) * L_.steps * L_.nq, "dual histories");
      vHistory_ = dev_.template alloc<float>(size_t(L_.batch) * L_.steps * L_.nk, "dual histories");
    }
    if (options_.errors && L_.steps) errors_ = dev_.template alloc<double>(size_t(L_.batch) * L_.steps * 4, "errors");
    if (L_.dv) output_ = dev_.template alloc<float>(size_t(L_.batch) * L_.nq * L_.dv, "output");
    if (options_.plan) plan_ = dev_.template alloc<float>(size_t(L_.batch) * L_.nq * L_.nk, "dense plan");
    if (L_.tileRows) {
      tileMean_ = dev_.template alloc<float>(size_t(L_.batch) * L_.tileRows * L_.tileCols, "display tiles");
      tileMax_ = dev_.template alloc<float>(size_t(L_.batch) * L_.tileRows * L_.tileCols, "display tiles");
    }
  }

  // The duals (loop or given) and the requested outputs. Repeatable: every call starts from scratch.
  // options.tf32 picks the kernels' tile products (kernel_sets.h); the orchestration is the same.
  void solve() {
    if (options_.tf32)
      solveWith<Tf32Kernels>();
    else
      solveWith<Fp32Kernels>();
  }

  // Waits for the device, reports any failure, and downloads what was asked for.
  CudaAttentionResult collect() {
    dev_.finish();
    CudaAttentionResult r;
    r.steps = L_.steps;
    r.u = downloadPotential(ut_, L_.nq, L_.ldQ);
    r.v = downloadPotential(vt_, L_.nk, L_.ldK);
    if (uHistory_.size()) {
      r.uHistory = download(uHistory_);
      r.vHistory = download(vHistory_);
      // The device writes a side's history row only at its own half-steps; the other rows repeat the previous
      // value (row 0 of v: the initial potential), as the CPU loop records both sides after every step.
      const float eps = float(spec_.eps);
      fillUnchangedHistoryRows(r, L_.batch, L_.steps, L_.nq, L_.nk, [&](long long b, int j) {
        if (spec_.initialV) return (*spec_.initialV)[size_t(b * L_.nk + j)];
        return isNegInf(p_.logNu[size_t(j)]) ? negInf() : eps * 0.f;
      });
    }
    if (errors_.size()) r.errorHistory = stepErrors(download(errors_));
    if (output_.size()) r.output = download(output_);
    if (plan_.size()) r.plan = download(plan_);
    if (tileMean_.size()) {
      DisplayTiles& t = r.tiles;
      t.rows = L_.tileRows;
      t.cols = L_.tileCols;
      for (long long c = 0; c <= t.rows; ++c) t.rowStarts.push_back(blockStart(c, L_.nq, t.rows));
      for (long long c = 0; c <= t.cols; ++c) t.colStarts.push_back(blockStart(c, L_.nk, t.cols));
      t.mean = download(tileMean_);
      t.max = download(tileMax_);
    }
    return r;
  }

 private:
  template <class K>
  void solveWith() {
    flashOutputDone_ = false;
    if (!L_.loop) {
      ut_ = uploadPotential(*spec_.givenU, L_.nq, L_.ldQ);
      vt_ = uploadPotential(*spec_.givenV, L_.nk, L_.ldK);
    } else {
      initPotential(dev_, L_.batch, logMu_, L_.nq, L_.ldQ, ut_);
      if (spec_.initialV)
        vt_ = uploadPotential(*spec_.initialV, L_.nk, L_.ldK);
      else
        initPotential(dev_, L_.batch, logNu_, L_.nk, L_.ldK, vt_);
      for (int t = 1; t <= L_.passes; ++t) {
        halfStep<K>(t);
        dev_.afterHalfStep(options_.canceled);
      }
    }
    if (L_.dv && !flashOutputDone_) {
      typename K::Apply::Params a{planTile(), v_.data(), L_.dv, int(L_.dvPad), output_.data()};
      dev_.template launch<typename K::Apply>(K::kApply, K::Apply::grid(a), a);
    }
    if (options_.plan) {
      typename K::Plan::Params a{planTile(), plan_.data()};
      dev_.template launch<typename K::Plan>(K::kPlan, K::Plan::grid(a), a);
    }
    if (L_.tileRows) {
      typename K::Display::Params a{planTile(), L_.tileRows, L_.tileCols, L_.cellsPerGroup, tileMean_.data(),
                                    tileMax_.data()};
      dev_.template launch<typename K::Display>(K::kDisplay, K::Display::grid(a), a);
    }
  }

  std::string pathName() const {
    if (options_.plan) return spec_.family + " plan path";
    if (L_.dv) return spec_.family + " fused output path";
    return spec_.family + " duals path";
  }

  // Given duals in score coordinates → padded potentials in eps units (−inf stays −inf).
  Buffer<float> uploadPotential(const std::vector<float>& duals, int n, long long ld) {
    std::vector<float> padded(size_t(L_.batch * ld), negInf());
    const float eps = float(spec_.eps);
    for (long long b = 0; b < L_.batch; ++b)
      for (long long i = 0; i < n; ++i) padded[size_t(b * ld + i)] = duals[size_t(b * n + i)] / eps;
    return uploadVector(dev_, padded, "potentials");
  }

  std::vector<float> downloadPotential(const Buffer<float>& potential, int n, long long ld) {
    const std::vector<float> padded = download(potential);
    std::vector<float> out(size_t(L_.batch) * n);
    const float eps = float(spec_.eps);
    for (long long b = 0; b < L_.batch; ++b)
      for (long long i = 0; i < n; ++i) out[size_t(b * n + i)] = eps * padded[size_t(b * ld + i)];
    return out;
  }

  template <class T>
  std::vector<T> download(const Buffer<T>& buf) {
    std::vector<T> host;
    try {
      host.resize(buf.size());
    } catch (const std::bad_alloc&) {
      throw ResourceError(spec_.family + " (CUDA): not enough host memory for a " +
                          formatBytes(double(buf.size()) * sizeof(T)) + " result; ask for fewer heads or no dense plan");
    }
    dev_.download(host.data(), buf, buf.size());
    return host;
  }

  PlanTileParams planTile() const {
    return PlanTileParams{qT_.data(), kT_.data(), ut_.data(), vt_.data(), L_.batch, L_.nq, L_.nk, int(L_.dPad),
                          L_.ldQ, L_.ldK, scoreScale_, p_.scale};
  }

  // Half-step t (1-based) of core/ops/sinkhorn/sinkhorn_loop.h: odd t normalises rows, even t columns; t = T + 1 only
  // records the last plan's errors on its open side.
  template <class K>
  void halfStep(int t) {
    const bool rows = t % 2 == 1;
    int splits = rows ? L_.rowSplits : L_.colSplits;
    if (t == 1 && spec_.flashSoftmax && L_.dv) {
      typename K::FlashSoftmax::Params a{planTile(), logMu_.data(), v_.data(), L_.dv, int(L_.dvPad), output_.data(),
                                         states_.data()};
      dev_.template launch<typename K::FlashSoftmax>(K::kFlashSoftmax, K::FlashSoftmax::grid(a), a);
      splits = 1;
      flashOutputDone_ = true;
    } else {
      using Lse = typename K::Lse;
      typename Lse::Params a{rows ? qT_.data() : kT_.data(),
                             rows ? kT_.data() : qT_.data(),
                             rows ? vt_.data() : ut_.data(),
                             states_.data(),
                             L_.batch,
                             int(L_.dPad),
                             rows ? L_.ldQ : L_.ldK,
                             rows ? L_.ldK : L_.ldQ,
                             scoreScale_,
                             int((rows ? L_.ldK : L_.ldQ) / Lse::BN),
                             splits};
      dev_.template launch<Lse>(K::kLse, Lse::grid(a, rows ? L_.nq : L_.nk), a);
    }
    const bool errors = errors_.size() > 0;
    Buffer<float>& history = rows ? uHistory_ : vHistory_;
    CloseHalfStepKernel::Params c{states_.data(),
                                  splits,
                                  L_.batch,
                                  rows ? L_.nq : L_.nk,
                                  rows ? L_.ldQ : L_.ldK,
                                  rows ? logMu_.data() : logNu_.data(),
                                  rows ? targetMu_.data() : targetNu_.data(),
                                  rows ? ut_.data() : vt_.data(),
                                  float(spec_.eps),
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

  Dev& dev_;
  const AttentionProblem& p_;
  DenseRunSpec spec_;
  const CudaOptions& options_;
  DenseLayout L_;
  float scoreScale_;
  bool flashOutputDone_ = false;
  Buffer<float> qT_, kT_, v_, logMu_, logNu_, targetMu_, targetNu_, ut_, vt_, states_;
  Buffer<float> uHistory_, vHistory_, output_, plan_, tileMean_, tileMax_;
  Buffer<double> errors_;
};

// The runs behind the public functions (sinkhorn_cuda.h, softmax_cuda.h), for any device.
inline DenseRunSpec sinkhornRunSpec(int T, double eps) {
  DenseRunSpec spec;
  spec.family = "Sinkhorn";
  spec.T = T;
  spec.eps = eps;
  return spec;
}

// The spec points at params.initialV: params must outlive the run.
inline DenseRunSpec sinkhornRunSpec(const SinkhornCudaParams& params) {
  DenseRunSpec spec = sinkhornRunSpec(params.T, params.eps);
  if (!params.initialV.empty()) spec.initialV = &params.initialV;
  return spec;
}

// Softmax is the T = 1 Sinkhorn step with eps = 1 (core/ops/softmax.cpp); its output takes one fused pass.
inline DenseRunSpec softmaxRunSpec() {
  DenseRunSpec spec = sinkhornRunSpec(1, 1.0);
  spec.family = "softmax";
  spec.flashSoftmax = true;
  return spec;
}

inline DenseRunSpec dualsRunSpec(const std::vector<float>& u, const std::vector<float>& v, double eps) {
  DenseRunSpec spec = sinkhornRunSpec(1, eps);
  spec.family = "plan from duals";
  spec.givenU = &u;
  spec.givenV = &v;
  return spec;
}

// Runs on any device; the GPU version (dense_run.cu) is runDenseCuda below.
template <class Dev>
CudaAttentionResult runDense(Dev& dev, const AttentionProblem& problem, const DenseRunSpec& spec,
                             const CudaOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  DenseRun<Dev> run(dev, problem, spec, options);
  run.upload();
  run.solve();
  CudaAttentionResult result = run.collect();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// On the GPU options.device (dense_run.cu; only in CUDA builds). The caller validates the request first.
CudaAttentionResult runDenseCuda(const AttentionProblem& problem, const DenseRunSpec& spec, const CudaOptions& options);

}  // namespace tl::cuda
