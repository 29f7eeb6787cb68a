#pragma once
// The host side of a hard ESP run (esp_cuda.h): the memory check, uploads, projections, the segmented sort,
// the tie groups, the block masses, the costs, the weights (host: L numbers per item), the output and the
// downloads. A template over the device like band_run.h: the GPU (CudaDevice, esp.cu) and, kernel body by
// kernel body, the CPU (SimDevice in tests/core/cuda). The sort is the device's own:
//   sortSegments(dev, keysIn, keysOut, valuesIn, valuesOut, segments, length)
// sorts each of `segments` consecutive runs of `length` float keys ascending with their int values, stably
// (equal keys keep their order, −0 equals +0): CUB's segmented radix sort on the GPU (esp.cu), an exact host
// sort on the simulated device. Found by argument-dependent lookup on the device type.
#include <algorithm>
#include <utility>
#include <vector>

#include "cuda/esp_cuda.h"
#include "cuda/esp_kernels.h"
#include "cuda/launch_config.h"
#include "cuda/run_transfers.h"

namespace tl::cuda {

// Everything a run allocates (checked against the free memory before the first allocation).
inline MemoryEstimate espMemory(const EspCudaProblem& p) {
  const double b = p.batch, f = sizeof(float), L = p.L, entries = double(p.coupling.size());
  MemoryEstimate e;
  e.items.push_back({"q, k and v", b * (double(p.nq + p.nk) * p.d + double(p.nk) * p.dv) * f});
  // Per side: the sort's keys and values in and out, the group bounds; the query ranks.
  e.items.push_back({"projections, orders, groups and ranks", b * L * (6.0 * (p.nq + p.nk) + p.nq) * f});
  e.items.push_back({"sort workspace (about one more copy)", b * L * 2.0 * std::max(p.nq, p.nk) * f});
  e.items.push_back({"block masses", b * L * entries * f + entries * sizeof(EspCouplingEntry)});
  e.items.push_back({"output", b * double(p.nq) * p.dv * f});
  return e;
}

template <class Dev>
class EspRun {
  template <class T>
  using Buffer = typename Dev::template Buffer<T>;

 public:
  EspRun(Dev& dev, const EspCudaProblem& problem, const EspCudaOptions& options)
      : dev_(dev), p_(problem), options_(options), segments_((long long)problem.batch * problem.L) {}

  void upload() {
    requireDeviceMemory(dev_, espMemory(p_), "ESP sorted output path", p_.batch, p_.nq, p_.nk);
    q_ = uploadArray(dev_, p_.q, size_t(p_.batch) * p_.nq * p_.d, "q");
    k_ = uploadArray(dev_, p_.k, size_t(p_.batch) * p_.nk * p_.d, "k");
    if (p_.dv) v_ = uploadArray(dev_, p_.v, size_t(p_.batch) * p_.nk * p_.dv, "v");
    theta_ = uploadArray(dev_, p_.directions, size_t(p_.L) * p_.d, "slice directions");
    queries_ = Side(dev_, segments_, p_.nq);
    keys_ = Side(dev_, segments_, p_.nk);
    coupling_ = uploadVector(dev_, p_.coupling, "rank coupling");
    const std::vector<int> starts = rowStarts();
    rowStart_ = uploadVector(dev_, starts, "rank coupling");
    mass_ = dev_.template alloc<float>(size_t(segments_) * p_.coupling.size(), "block masses");
    rank_ = dev_.template alloc<int>(size_t(segments_) * p_.nq, "query ranks");
    costs_ = dev_.template alloc<float>(size_t(segments_), "slice costs");
    shares_ = dev_.template alloc<float>(size_t(segments_), "slice shares");
    if (p_.dv) output_ = dev_.template alloc<float>(size_t(p_.batch) * p_.nq * p_.dv, "output");
  }

  // Device work (repeatable), with the host's weights in between (L numbers per item).
  void solve() {
    sortSide(q_, p_.nq, queries_, rank_.data());
    sortSide(k_, p_.nk, keys_, nullptr);
    dev_.afterHalfStep(options_.canceled);
    const EspSlices slices = sliceArrays();
    const int entries = int(p_.coupling.size());
    EspBlockMassKernel::Params m{slices, p_.nq, p_.nk, mass_.data()};
    dev_.template launch<EspBlockMassKernel>("EspBlockMassKernel", EspBlockMassKernel::grid(segments_, entries), m);
    EspCostKernel::Params c{q_.data(), k_.data(), p_.nq, p_.nk, p_.d, p_.L, slices, mass_.data(), p_.p, costs_.data()};
    dev_.template launch<EspCostKernel>("EspCostKernel", EspCostKernel::grid(segments_), c);
    dev_.afterHalfStep(options_.canceled);
    shareWeights();
    if (p_.dv) {
      EspOutputKernel::Params o{v_.data(), p_.nq,          p_.nk,          p_.dv,         p_.L,
                                slices,    mass_.data(),   rank_.data(),   shares_.data(), output_.data()};
      dev_.template launch<EspOutputKernel>("EspOutputKernel", EspOutputKernel::grid(o, p_.batch), o);
    }
  }

  EspCudaResult collect() {
    dev_.finish();
    EspCudaResult r = std::move(result_);
    if (options_.orders) {
      r.queryValues = downloadVector(dev_, queries_.sortedKeys);
      r.keyValues = downloadVector(dev_, keys_.sortedKeys);
      r.queryOrder = downloadVector(dev_, queries_.order);
      r.keyOrder = downloadVector(dev_, keys_.order);
    }
    if (p_.dv) r.output = downloadVector(dev_, output_);
    return r;
  }

 private:
  // One side's sort: projections and the identity order in; sorted projections, the order and each rank's tie
  // group out.
  struct Side {
    Buffer<float> keys, sortedKeys;
    Buffer<int> identity, order, first, end;
    Side() = default;
    Side(Dev& dev, long long segments, int n)
        : keys(dev.template alloc<float>(size_t(segments) * n, "projections")),
          sortedKeys(dev.template alloc<float>(size_t(segments) * n, "sorted projections")),
          identity(dev.template alloc<int>(size_t(segments) * n, "token indices")),
          order(dev.template alloc<int>(size_t(segments) * n, "sorted orders")),
          first(dev.template alloc<int>(size_t(segments) * n, "tie groups")),
          end(dev.template alloc<int>(size_t(segments) * n, "tie groups")) {}
  };


  // Projects, sorts and groups one side; `rank`: where its tokens sit in each order (queries only).
  void sortSide(const Buffer<float>& x, int n, Side& side, int* rank) {
    EspProjectKernel::Params a{x.data(), theta_.data(), p_.batch, n, p_.d, p_.L, side.keys.data(),
                               side.identity.data()};
    dev_.template launch<EspProjectKernel>("EspProjectKernel", EspProjectKernel::grid(a), a);
    sortSegments(dev_, side.keys, side.sortedKeys, side.identity, side.order, int(segments_), n);
    EspGroupKernel::Params g{side.sortedKeys.data(), side.order.data(), n, p_.splitTies ? 1 : 0, side.first.data(),
                             side.end.data(), rank};
    dev_.template launch<EspGroupKernel>("EspGroupKernel", EspGroupKernel::grid(segments_, n), g);
  }

  // The first entry of Λ of every query rank, and n_q's (the end).
  std::vector<int> rowStarts() const {
    std::vector<int> starts(size_t(p_.nq) + 1, int(p_.coupling.size()));
    for (size_t e = p_.coupling.size(); e-- > 0;) starts[size_t(p_.coupling[e].r)] = int(e);
    return starts;
  }

  EspSlices sliceArrays() const {
    return {queries_.first.data(), queries_.end.data(), keys_.first.data(), keys_.end.data(), queries_.order.data(),
            keys_.order.data(),    coupling_.data(),    rowStart_.data(),   int(p_.coupling.size())};
  }

  // w per item from its costs (host), then share_l = n_q·w_l on the device.
  void shareWeights() {
    result_.costs = downloadVector(dev_, costs_);
    result_.weights.clear();
    std::vector<float> shares;
    for (int item = 0; item < p_.batch; ++item) {
      const auto first = result_.costs.begin() + long(item) * p_.L;
      const std::vector<float> w = options_.weights(std::vector<float>(first, first + p_.L));
      result_.weights.insert(result_.weights.end(), w.begin(), w.end());
      for (float x : w) shares.push_back(float(p_.nq) * x);
    }
    dev_.upload(shares_, shares.data(), shares.size());
  }

  Dev& dev_;
  const EspCudaProblem& p_;
  EspCudaOptions options_;
  long long segments_;
  Buffer<float> q_, k_, v_, theta_, costs_, shares_, output_, mass_;
  Side queries_, keys_;
  Buffer<int> rank_, rowStart_;
  Buffer<EspCouplingEntry> coupling_;
  EspCudaResult result_;
};

template <class Dev>
EspCudaResult runEsp(Dev& dev, const EspCudaProblem& problem, const EspCudaOptions& options) {
  EspRun<Dev> run(dev, problem, options);
  run.upload();
  run.solve();
  return run.collect();
}

}  // namespace tl::cuda
