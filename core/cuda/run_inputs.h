#pragma once
// The inputs of a device run, shared by the dense and the banded runs (dense_run.h, band_run.h), for any
// device (the Dev interface of dense_run.h): q and k (and v) converted into the kernels' padded float32
// operands (convert_kernels.h) with one check for non-finite values, host vectors uploaded, potentials
// initialised. A Layout provides batch, nq, nk, d, dv and the padded ldQ, ldK, dPad, dvPad (DenseLayout,
// BandLayout).
#include <string>
#include <utility>
#include <vector>

#include "cuda/attention_problem.h"
#include "cuda/convert_kernels.h"
#include "cuda/half_step.h"

namespace tl::cuda {

template <class Dev>
struct DeviceOperands {
  typename Dev::template Buffer<float> qT, kT;  // [batch][dPad][ldQ], [batch][dPad][ldK]
  typename Dev::template Buffer<float> v;       // [batch][ldK][dvPad]; empty when not asked for
};

namespace detail {

// One of q, k ([batch][n][d] of the problem's element type) → k-major [batch][dPad][ld] float32.
template <class Dev, class Layout>
typename Dev::template Buffer<float> convertTransposed(Dev& dev, const AttentionProblem& p, const Layout& L,
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
template <class Dev, class Layout>
typename Dev::template Buffer<float> convertRows(Dev& dev, const AttentionProblem& p, const Layout& L, int* nonFinite,
                                                 bool tf32) {
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
template <class Dev, class Layout>
DeviceOperands<Dev> uploadOperands(Dev& dev, const AttentionProblem& p, const Layout& L, bool withV, bool tf32,
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

template <class Dev>
typename Dev::template Buffer<float> uploadVector(Dev& dev, const std::vector<float>& host, const char* what) {
  auto buf = dev.template alloc<float>(host.size(), what);
  dev.upload(buf, host.data(), host.size());
  return buf;
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

}  // namespace tl::cuda
