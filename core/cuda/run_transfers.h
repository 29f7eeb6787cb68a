#pragma once
// What a device run moves in and out, shared by the dense and the banded runs (dense_run.h, band_run.h), for
// any device (the Dev interface of dense_run.h). In: q and k (and v) converted into the kernels' padded
// float32 operands (convert_kernels.h) with one check for non-finite values, host vectors uploaded, potentials
// initialised; the padded operand sizes and their memory items. Out: the error history and the dual
// histories' rows that the close kernels leave unwritten.
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda/attention_problem.h"
#include "cuda/cuda_error.h"
#include "cuda/convert_kernels.h"
#include "cuda/dense_kernels.h"
#include "cuda/half_step.h"
#include "cuda/launch_config.h"

namespace tl::cuda {

// The padded sizes of a problem's operands (pure), the part that DenseLayout and BandLayout share.
struct OperandLayout {
  int batch = 0, nq = 0, nk = 0, d = 0, dv = 0;
  long long ldQ = 0, ldK = 0, dPad = 0, dvPad = 0;  // padded token axes, head and value dimensions
};

inline OperandLayout operandLayout(const AttentionProblem& p) {
  OperandLayout L;
  L.batch = p.batch;
  L.nq = p.nq;
  L.nk = p.nk;
  L.d = p.d;
  L.dv = p.v ? p.dv : 0;
  L.ldQ = roundUp(p.nq, kTokenPad);
  L.ldK = roundUp(p.nk, kTokenPad);
  L.dPad = roundUp(p.d, kHeadDimPad);
  L.dvPad = L.dv ? roundUp(L.dv, kValueDimPad) : 0;
  return L;
}

// The operands' items of a run's memory estimate: q and k, the largest input staging buffer, v.
inline void addOperandMemory(MemoryEstimate& e, const OperandLayout& L, const AttentionProblem& p) {
  const double b = L.batch, f = sizeof(float);
  const double staging = double(elementSize(p.type)) *
                         std::max({double(L.nq) * L.d, double(L.nk) * L.d, double(L.nk) * L.dv}) * b;
  e.items.push_back({"q and k", b * L.dPad * double(L.ldQ + L.ldK) * f});
  e.items.push_back({"input staging", staging});
  if (L.dv) e.items.push_back({"v", b * double(L.ldK) * double(L.dvPad) * f});
}

// The loop's results in a run's memory estimate: the dual and error histories of `steps` steps (when asked
// for) and the output.
inline void addLoopResultMemory(MemoryEstimate& e, const OperandLayout& L, int steps, const CudaOptions& options) {
  const double b = L.batch, f = sizeof(float);
  if (options.histories) e.items.push_back({"dual histories", b * steps * double(L.nq + L.nk) * f});
  if (options.errors) e.items.push_back({"error history", b * steps * 4 * sizeof(double)});
  if (L.dv) e.items.push_back({"output", b * double(L.nq) * L.dv * f});
}

template <class Dev>
struct DeviceOperands {
  typename Dev::template Buffer<float> qT, kT;  // [batch][dPad][ldQ], [batch][dPad][ldK]
  typename Dev::template Buffer<float> v;       // [batch][ldK][dvPad]; empty when not asked for
};

namespace detail {

// One of q, k ([batch][n][d] of the problem's element type) → k-major [batch][dPad][ld] float32.
template <class Dev>
typename Dev::template Buffer<float> convertTransposed(Dev& dev, const AttentionProblem& p, const OperandLayout& L,
                                                       const void* src, int n, long long ld, int* nonFinite,
                                                       bool tf32, const char* name) {
  const size_t bytes = size_t(L.batch) * n * L.d * elementSize(p.type);
  auto raw = dev.template alloc<unsigned char>(bytes, "input staging");
  dev.upload(raw, static_cast<const unsigned char*>(src), bytes);
  auto out = dev.template alloc<float>(size_t(L.batch * L.dPad * ld), name);
  ConvertTransposeKernel::Params a{raw.data(), p.type, n, L.d, int(L.dPad), ld, out.data(), nonFinite, tf32};
  dev.template launch<ConvertTransposeKernel>("ConvertTransposeKernel", ConvertTransposeKernel::grid(a, L.batch), a);
  return out;  // `raw` is released after the kernel (stream-ordered on the device)
}

// v ([batch][nk][dv]) → row-major [batch][ldK][dvPad] float32.
template <class Dev>
typename Dev::template Buffer<float> convertRows(Dev& dev, const AttentionProblem& p, const OperandLayout& L,
                                                 int* nonFinite, bool tf32) {
  const size_t bytes = size_t(L.batch) * L.nk * L.dv * elementSize(p.type);
  auto raw = dev.template alloc<unsigned char>(bytes, "input staging");
  dev.upload(raw, static_cast<const unsigned char*>(p.v), bytes);
  auto out = dev.template alloc<float>(size_t(L.batch * L.ldK * L.dvPad), "v");
  ConvertRowsKernel::Params a{raw.data(), p.type, L.nk, L.dv, L.ldK, L.dvPad, out.data(), nonFinite, tf32};
  dev.template launch<ConvertRowsKernel>("ConvertRowsKernel", ConvertRowsKernel::grid(a, L.batch), a);
  return out;
}

}  // namespace detail

// q, k and, when `withV`, v as padded float32 operands (rounded to TF32 when `tf32`); a non-finite input value
// throws throwNonFinite's error for `family`.
template <class Dev>
DeviceOperands<Dev> uploadOperands(Dev& dev, const AttentionProblem& p, const OperandLayout& L, bool withV, bool tf32,
                                   const std::string& family) {
  auto nonFinite = dev.template alloc<int>(1, "a status flag");
  const int zero = 0;
  dev.upload(nonFinite, &zero, 1);
  DeviceOperands<Dev> ops;
  ops.qT = detail::convertTransposed(dev, p, L, p.q, L.nq, L.ldQ, nonFinite.data(), tf32, "q");
  ops.kT = detail::convertTransposed(dev, p, L, p.k, L.nk, L.ldK, nonFinite.data(), tf32, "k");
  if (withV) ops.v = detail::convertRows(dev, p, L, nonFinite.data(), tf32);
  int found = 0;
  dev.download(&found, nonFinite, 1);
  if (found) throwNonFinite(p, family);
  return ops;
}

// Before a run allocates anything: CudaError with the estimate's items when it needs more than 95 % of the
// device's free memory (the rest is the allocator's and the kernels' own).
template <class Dev>
void requireDeviceMemory(Dev& dev, const MemoryEstimate& need, const std::string& path, long long batch, long long nq,
                         long long nk) {
  const double free = dev.freeBytes();
  if (need.total() > 0.95 * free) throw CudaError(outOfMemoryMessage(path, need, batch, nq, nk, free));
}

// `count` host values in a new device buffer.
template <class Dev, class T>
typename Dev::template Buffer<T> uploadArray(Dev& dev, const T* host, size_t count, const char* what) {
  auto buf = dev.template alloc<T>(count, what);
  dev.upload(buf, host, count);
  return buf;
}

template <class Dev, class T>
typename Dev::template Buffer<T> uploadVector(Dev& dev, const std::vector<T>& host, const char* what) {
  return uploadArray(dev, host.data(), host.size(), what);
}

// A whole device buffer on the host.
template <class Dev, class Buffer>
auto downloadVector(Dev& dev, const Buffer& buf) {
  using T = std::remove_pointer_t<decltype(buf.data())>;  // the buffers' data() is T*
  std::vector<T> host(buf.size());
  dev.download(host.data(), buf, host.size());
  return host;
}

// The attention-scale targets of a side's log marginal (half_step.h marginalTarget).
inline std::vector<float> marginalTargets(const std::vector<float>& logMarginal, float scale) {
  std::vector<float> t(logMarginal.size());
  for (size_t i = 0; i < t.size(); ++i) t[i] = marginalTarget(logMarginal[i], scale);
  return t;
}

// A potential [batch][ld]: 0 on the active tokens of the side, −inf on inactive and padded ones.
template <class Dev>
void initPotential(Dev& dev, int batch, const typename Dev::template Buffer<float>& logMarginal, int n, long long ld,
                   typename Dev::template Buffer<float>& potential) {
  InitPotentialKernel::Params a{logMarginal.data(), n, ld, potential.data()};
  dev.template launch<InitPotentialKernel>("InitPotentialKernel", InitPotentialKernel::grid(a, batch), a);
}

// The error history as the close kernels write it, [batch][steps][4] doubles (rowMax, rowMean, colMax,
// colMean), one StepErrors per step.
inline std::vector<StepErrors> stepErrors(const std::vector<double>& e) {
  std::vector<StepErrors> out(e.size() / 4);
  for (size_t s = 0; s < out.size(); ++s) out[s] = StepErrors{e[4 * s], e[4 * s + 1], e[4 * s + 2], e[4 * s + 3]};
  return out;
}

// The dual histories' rows of the side a half-step leaves unchanged (v at odd steps, u at even ones), which
// the close kernels do not write: the side's previous row, or initialV(b, j) for v at step 1.
template <class InitialV>
void fillUnchangedHistoryRows(CudaAttentionResult& r, long long batch, int steps, int nq, int nk,
                              const InitialV& initialV) {
  for (long long b = 0; b < batch; ++b) {
    float* u = r.uHistory.data() + b * steps * nq;
    float* v = r.vHistory.data() + b * steps * nk;
    for (int t = 1; t <= steps; ++t) {
      if (t % 2 == 1) {
        for (int j = 0; j < nk; ++j) v[(t - 1) * nk + j] = t == 1 ? initialV(b, j) : v[(t - 2) * nk + j];
      } else {
        for (int i = 0; i < nq; ++i) u[(t - 1) * nq + i] = u[(t - 2) * nq + i];
      }
    }
  }
}

}  // namespace tl::cuda
