#pragma once
// The host side of a soft ESP run (esp_soft_cuda.h), a template over the device like dense_run.h: the GPU
// (CudaDevice, esp_soft.cu) and, kernel body by kernel body, the CPU (SimDevice in tests/core/cuda).
// Two passes over the slices, because a slice's share of the plan needs every slice's cost first:
//   1. per slice: the row sums of its SoftSort matrices (both sides), then D_l from the tiles of U_l against C;
//   2. the coefficients from the costs (the caller's softmax), then per slice its row sums again and its tiles
//      of U_l added into the plan; finally O = A·V.
// Beside the plan the device holds O(n·(d + d_v)) numbers and one slice's O(n) layout: SoftSort entries are
// formed where a tile loads them, U_l exists only as tiles in registers.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/esp_soft_bands.h"
#include "cuda/esp_soft_cuda.h"
#include "cuda/esp_soft_kernels.h"
#include "cuda/launch_config.h"
#include "cuda/run_transfers.h"

namespace tl::cuda {

// Where one slice's work is (esp_soft_bands.h), planned on the host.
struct SoftSliceLayout {
  SoftSortBands queries, keys;
  TileEntries queryTiles, keyTiles;
  TileSchedule schedule;
};

inline std::vector<SoftSliceLayout> softSliceLayouts(const EspSoftProblem& p) {
  std::vector<SoftSliceLayout> layouts(size_t(p.slices));
  for (int l = 0; l < p.slices; ++l) {
    SoftSliceLayout& s = layouts[size_t(l)];
    s.queries = softSortBands(p.sortedQ.data() + size_t(l) * p.validQ, p.validQ, p.reach);
    s.keys = softSortBands(p.sortedK.data() + size_t(l) * p.validK, p.validK, p.reach);
    s.queryTiles = tileEntries(s.queries, p.couplingRank);
    s.keyTiles = tileEntries(s.keys, p.couplingKeyRank);
    s.schedule = tileSchedule(s.queryTiles, s.keyTiles);
  }
  return layouts;
}

// Everything the run allocates, with the largest slice's rows and tiles.
inline MemoryEstimate espSoftMemory(const EspSoftProblem& p, const std::vector<SoftSliceLayout>& layouts) {
  const double f = sizeof(float);
  double partials = 0;
  for (const SoftSliceLayout& s : layouts)
    partials = std::max(partials, double(s.schedule.keyFirst.size()) * s.schedule.maxCount * f);
  MemoryEstimate e;
  e.items.push_back({"dense plan", double(p.nq) * p.nk * f});
  e.items.push_back({"q and k", double(p.nq + p.nk) * p.d * f});
  // Sorted values, tokens, bands and row sums, the rank coupling, tile ranges and schedules: a few numbers
  // per token.
  e.items.push_back({"slice layout", (5.0 * (p.validQ + p.validK) + 3.0 * p.couplingRank.size()) * 4.0});
  e.items.push_back({"cost partial sums", partials});
  if (p.v) e.items.push_back({"v and the output", double(p.nk + p.nq) * p.dv * f});
  return e;
}

template <class Dev>
class EspSoftRun {
  template <class T>
  using Buffer = typename Dev::template Buffer<T>;

 public:
  EspSoftRun(Dev& dev, const EspSoftProblem& problem) : dev_(dev), p_(problem), layouts_(softSliceLayouts(problem)) {}

  EspSoftCudaResult run(const SliceCoefficients& coefficients, const std::function<bool()>& canceled) {
    requireDeviceMemory(dev_, espSoftMemory(p_, layouts_), "soft ESP plan path", 1, p_.nq, p_.nk);
    q_ = uploadArray(dev_, p_.q, size_t(p_.nq) * p_.d, "q");
    k_ = uploadArray(dev_, p_.k, size_t(p_.nk) * p_.d, "k");
    rank_ = uploadVector(dev_, p_.couplingRank, "rank coupling");
    keyRank_ = uploadVector(dev_, p_.couplingKeyRank, "rank coupling");
    mass_ = uploadVector(dev_, p_.couplingMass, "rank coupling");

    EspSoftCudaResult r;
    for (int l = 0; l < p_.slices; ++l) {
      r.costs.push_back(sliceCost(l));
      dev_.afterHalfStep(canceled);
    }
    const std::vector<float> c = coefficients(r.costs);
    if (int(c.size()) != p_.slices) throw std::logic_error("soft ESP: one coefficient per slice expected");

    Buffer<float> plan = dev_.template alloc<float>(size_t(p_.nq) * p_.nk, "dense plan");
    FillZeroKernel::Params zero{plan.data(), (long long)p_.nq * p_.nk};
    dev_.template launch<FillZeroKernel>("FillZeroKernel", FillZeroKernel::grid(zero), zero);
    for (int l = 0; l < p_.slices; ++l) {
      addSlicePlan(l, c[size_t(l)], plan);
      dev_.afterHalfStep(canceled);
    }
    r.plan.resize(size_t(p_.nq) * p_.nk);
    if (p_.v) r.output = output(plan);
    dev_.finish();
    dev_.download(r.plan.data(), plan, r.plan.size());
    return r;
  }

 private:
  // One slice on the device: sorted values, tokens, bands and row sums of both sides, tile ranges, schedule.
  struct Slice {
    Buffer<float> sortedQ, sortedK, rowSumQ, rowSumK;
    Buffer<int> loQ, lenQ, loK, lenK, tokenQ, tokenK;
    Buffer<int> queryFirst, queryEnd, keyFirst, keyEnd, scheduleFirst, scheduleCount;
  };

  // A slice's part of a [L][n] array.
  template <class T>
  static std::vector<T> part(const std::vector<T>& all, int l, int n) {
    return std::vector<T>(all.begin() + long(l) * n, all.begin() + long(l + 1) * n);
  }

  // Uploads a side's bands and computes its row sums.
  void softSortSums(const Buffer<float>& sorted, const SoftSortBands& bands, int n, Buffer<int>& lo, Buffer<int>& len,
                    Buffer<float>& rowSum) {
    lo = uploadVector(dev_, bands.lo, "SoftSort bands");
    len = uploadVector(dev_, bands.len, "SoftSort bands");
    rowSum = dev_.template alloc<float>(size_t(n), "SoftSort row sums");
    SoftSortSumsKernel::Params a{{sorted.data(), lo.data(), len.data(), nullptr, p_.sortTemp}, n, rowSum.data()};
    dev_.template launch<SoftSortSumsKernel>("SoftSortSumsKernel", SoftSortSumsKernel::grid(a), a);
  }

  Slice formSlice(int l) {
    const SoftSliceLayout& s = layouts_[size_t(l)];
    Slice b;
    b.sortedQ = uploadVector(dev_, part(p_.sortedQ, l, p_.validQ), "sorted projections");
    b.sortedK = uploadVector(dev_, part(p_.sortedK, l, p_.validK), "sorted projections");
    b.tokenQ = uploadVector(dev_, part(p_.tokenQ, l, p_.validQ), "sorted tokens");
    b.tokenK = uploadVector(dev_, part(p_.tokenK, l, p_.validK), "sorted tokens");
    softSortSums(b.sortedQ, s.queries, p_.validQ, b.loQ, b.lenQ, b.rowSumQ);
    softSortSums(b.sortedK, s.keys, p_.validK, b.loK, b.lenK, b.rowSumK);
    b.queryFirst = uploadVector(dev_, s.queryTiles.first, "tile ranges");
    b.queryEnd = uploadVector(dev_, s.queryTiles.end, "tile ranges");
    b.keyFirst = uploadVector(dev_, s.keyTiles.first, "tile ranges");
    b.keyEnd = uploadVector(dev_, s.keyTiles.end, "tile ranges");
    b.scheduleFirst = uploadVector(dev_, s.schedule.keyFirst, "tile schedule");
    b.scheduleCount = uploadVector(dev_, s.schedule.keyCount, "tile schedule");
    return b;
  }

  template <class Kernel>
  typename Kernel::Params sliceParams(const Slice& b, int l) const {
    typename Kernel::Params a{};
    a.queries = {b.sortedQ.data(), b.loQ.data(), b.lenQ.data(), b.rowSumQ.data(), p_.sortTemp};
    a.keys = {b.sortedK.data(), b.loK.data(), b.lenK.data(), b.rowSumK.data(), p_.sortTemp};
    a.rank = rank_.data();
    a.keyRank = keyRank_.data();
    a.mass = mass_.data();
    a.queryFirst = b.queryFirst.data();
    a.queryEnd = b.queryEnd.data();
    a.keyFirst = b.keyFirst.data();
    a.keyEnd = b.keyEnd.data();
    a.scheduleFirst = b.scheduleFirst.data();
    a.scheduleCount = b.scheduleCount.data();
    a.maxCount = layouts_[size_t(l)].schedule.maxCount;
    a.validQ = p_.validQ;
    a.validK = p_.validK;
    a.tokenQ = b.tokenQ.data();
    a.tokenK = b.tokenK.data();
    a.nk = p_.nk;
    return a;
  }

  // D_l: the blocks' partial sums added on the host in double, in block order.
  float sliceCost(int l) {
    const Slice b = formSlice(l);
    auto a = sliceParams<SoftSliceCostKernel>(b, l);
    const size_t blocks = size_t(ceilDiv(p_.validQ, kEspTile)) * size_t(a.maxCount);
    Buffer<float> partial = dev_.template alloc<float>(blocks, "cost partial sums");
    a.q = q_.data();
    a.k = k_.data();
    a.d = p_.d;
    a.p = p_.p;
    a.partial = partial.data();
    dev_.template launch<SoftSliceCostKernel>("SoftSliceCostKernel", SoftSliceCostKernel::grid(a), a);
    std::vector<float> sums(blocks);
    dev_.download(sums.data(), partial, blocks);
    double cost = 0;
    for (float s : sums) cost += s;
    return float(cost);
  }

  void addSlicePlan(int l, float coefficient, Buffer<float>& plan) {
    const Slice b = formSlice(l);
    auto a = sliceParams<SoftSlicePlanKernel>(b, l);
    a.coefficient = coefficient;
    a.plan = plan.data();
    dev_.template launch<SoftSlicePlanKernel>("SoftSlicePlanKernel", SoftSlicePlanKernel::grid(a), a);
  }

  std::vector<float> output(const Buffer<float>& plan) {
    v_ = uploadVector(dev_, std::vector<float>(p_.v, p_.v + size_t(p_.nk) * p_.dv), "v");
    Buffer<float> out = dev_.template alloc<float>(size_t(p_.nq) * p_.dv, "output");
    PlanValuesKernel::Params a{plan.data(), v_.data(), p_.nq, p_.nk, p_.dv, out.data()};
    dev_.template launch<PlanValuesKernel>("PlanValuesKernel", PlanValuesKernel::grid(a), a);
    std::vector<float> o(size_t(p_.nq) * p_.dv);
    dev_.download(o.data(), out, o.size());
    return o;
  }

  Dev& dev_;
  const EspSoftProblem& p_;
  std::vector<SoftSliceLayout> layouts_;
  Buffer<float> q_, k_, mass_, v_;
  Buffer<int> rank_, keyRank_;
};

template <class Dev>
EspSoftCudaResult runEspSoft(Dev& dev, const EspSoftProblem& problem, const SliceCoefficients& coefficients,
                             const std::function<bool()>& canceled) {
  const auto start = std::chrono::steady_clock::now();
  EspSoftCudaResult r = EspSoftRun<Dev>(dev, problem).run(coefficients, canceled);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace tl::cuda
