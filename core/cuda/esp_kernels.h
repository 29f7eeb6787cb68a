#pragma once
// The kernel bodies of hard ESP on the GPU (esp_cuda.h; the CPU reference is core/ops/esp): slice projections,
// the tie groups of the sorted projections and the ranks of the queries, the blocks the rank coupling makes of
// the groups, the slice costs D_l and the output Σ_l n_q·w_l·U_l·V by gathers. Written as block.h kernels, so
// the CPU tests run them thread by thread (tests/core/cuda/sim_device.h). The sort between the projections and
// the rest is the device's own (esp_run.h sortSegments). Nothing here is n_q × n_k: every array is
// [batch][L][n], [batch][L][entries of Λ] or smaller.
//
// Tie groups (docs/operators/esp.md#ties, ties=split): the ranks of equal sorted values form a group g; the
// entries of Λ between a query group g_q and a key group g_k make one block of U_l, whose mass (their sum) is
// spread evenly over g_q × g_k. Blocks are never listed: an entry of Λ stands for its block when it is the
// block's first entry (its leader), and carries the block's mass; the others carry 0. Costs:
//   group bounds   O(|g|) per rank            (O(n²) for a group of the whole sequence)
//   block masses   O(m_g) per entry of Λ      (m_g ≤ 2|g_q| + |g_k| entries touch g_q)
//   D_l            |g_q|·|g_k|·d per block    (n_q·n_k·d for one block of whole-sequence groups, like the CPU)
//   output         (m_g + Σ|g_k|)·d_v per query (O(n·(n_q + n_k)·d_v) in the worst case)
// Without ties every group is one rank and every term is O(1) (O(d), O(d_v)).
#include "cuda/block.h"
#include "cuda/esp_cuda.h"
#include "cuda/esp_math.h"

namespace tl::cuda {

// s_l = x·θ_l for every token of every item: proj [batch][L][n] and the identity order beside it (the sort's
// values). One thread per token, an FMA per feature in increasing order.
struct EspProjectKernel {
  static constexpr int kThreads = 128;
  struct Params {
    const float* x;      // [batch][n][d]
    const float* theta;  // [L][d]
    int batch, n, d, L;
    float* proj;  // [batch][L][n]
    int* order;   // [batch][L][n]
  };
  struct Shared {};
  static Grid grid(const Params& p) { return {(p.n + kThreads - 1) / kThreads, p.L, p.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const long long i = (long long)bi.x * kThreads + tid;
      if (i >= p.n) return;
      const float* x = p.x + ((long long)bi.z * p.n + i) * p.d;
      const float* theta = p.theta + (long long)bi.y * p.d;
      const float s = espProjection(x, theta, p.d);
      const long long out = ((long long)bi.z * p.L + bi.y) * p.n + i;
      p.proj[out] = s;
      p.order[out] = int(i);
    });
  }
};

// The tie group of every rank of a sorted segment, [first, end) in ranks: the run of values equal to its own
// (ties=split), or the rank alone (ties=break); with `rank`, also where each token sits in the order. One
// thread per rank, scanning its run both ways.
struct EspGroupKernel {
  static constexpr int kThreads = 256;
  struct Params {
    const float* sorted;  // [segments][n]
    const int* order;     // [segments][n]: token of each rank
    int n;
    int split;
    int* first;  // [segments][n]
    int* end;    // [segments][n]
    int* rank;   // [segments][n]: rank of each token, or null
  };
  struct Shared {};
  static Grid grid(long long segments, int n) { return {segments, (n + kThreads - 1) / kThreads, 1}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const int r = bi.y * kThreads + tid;
      if (r >= p.n) return;
      const long long base = (long long)bi.x * p.n;
      const float* s = p.sorted + base;
      int lo = r, hi = r + 1;
      while (p.split && lo > 0 && s[lo - 1] == s[r]) --lo;
      while (p.split && hi < p.n && s[hi] == s[r]) ++hi;
      p.first[base + r] = lo;
      p.end[base + r] = hi;
      if (p.rank) p.rank[base + p.order[base + r]] = r;
    });
  }
};

// The sorted slices as the later kernels read them: per side the group bounds and the token of every rank,
// and Λ's entries with the first entry of each query rank.
struct EspSlices {
  const int* queryFirst;  // [batch][L][nq] (EspGroupKernel)
  const int* queryEnd;
  const int* keyFirst;  // [batch][L][nk]
  const int* keyEnd;
  const int* queryOrder;  // [batch][L][nq]: token of each rank
  const int* keyOrder;    // [batch][L][nk]
  const EspCouplingEntry* coupling;  // Λ's entries, ordered by query rank
  const int* rowStart;               // [nq + 1]: the first entry of each query rank
  int entries;                       // Λ's entries
};

// Per (item, slice) and entry of Λ: the mass of the block it leads, 0 when an earlier entry of its query
// group reaches the same key group (module comment). One thread per entry.
struct EspBlockMassKernel {
  static constexpr int kThreads = 256;
  struct Params {
    EspSlices s;
    int nq, nk;
    float* mass;  // [batch][L][entries]
  };
  struct Shared {};
  static Grid grid(long long segments, int entries) { return {segments, (entries + kThreads - 1) / kThreads, 1}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const int e = bi.y * kThreads + tid;
      if (e >= p.s.entries) return;
      const long long segment = bi.x;
      const int* qFirst = p.s.queryFirst + segment * p.nq;
      const int* kFirst = p.s.keyFirst + segment * p.nk;
      const EspCouplingEntry entry = p.s.coupling[e];
      const int group = qFirst[entry.r], keyGroup = kFirst[entry.s];
      const int groupEnd = p.s.queryEnd[segment * p.nq + entry.r];
      float mass = 0.f;
      for (int f = p.s.rowStart[group]; f < p.s.rowStart[groupEnd]; ++f) {
        if (kFirst[p.s.coupling[f].s] != keyGroup) continue;
        if (f < e) {  // an earlier entry leads this block
          mass = 0.f;
          break;
        }
        mass += p.s.coupling[f].mass;
      }
      p.mass[segment * p.s.entries + e] = mass;
    });
  }
};

// D_l = Σ_blocks mass/(|g_q||g_k|)·Σ_{i∈g_q, j∈g_k} ‖q_i − k_j‖^p (docs/operators/esp.md#definition, step 5):
// one thread block per (item, slice), its threads over Λ's entries (the blocks' leaders), double partial sums
// added in a fixed order.
struct EspCostKernel {
  static constexpr int kThreads = 128;
  struct Params {
    const float* q;  // [batch][nq][d]
    const float* k;  // [batch][nk][d]
    int nq, nk, d, L;
    EspSlices s;
    const float* mass;  // [batch][L][entries] (EspBlockMassKernel)
    float p;
    float* costs;  // [batch][L]
  };
  struct Shared {
    double sum[kThreads];
  };
  static Grid grid(long long segments) { return {segments, 1, 1}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long segment = bi.x, item = segment / p.L;
    const int* qOrder = p.s.queryOrder + segment * p.nq;
    const int* kOrder = p.s.keyOrder + segment * p.nk;
    const float* q = p.q + item * p.nq * p.d;
    const float* k = p.k + item * p.nk * p.d;
    block.forEach([&](int tid) {
      double sum = 0;
      for (int e = tid; e < p.s.entries; e += kThreads) {
        const float mass = p.mass[segment * p.s.entries + e];
        if (mass == 0.f) continue;
        const EspCouplingEntry entry = p.s.coupling[e];
        const int q0 = p.s.queryFirst[segment * p.nq + entry.r], q1 = p.s.queryEnd[segment * p.nq + entry.r];
        const int k0 = p.s.keyFirst[segment * p.nk + entry.s], k1 = p.s.keyEnd[segment * p.nk + entry.s];
        float blockCost = 0.f;
        for (int r = q0; r < q1; ++r)
          for (int c = k0; c < k1; ++c) {
            const float* qi = q + (long long)qOrder[r] * p.d;
            const float* kj = k + (long long)kOrder[c] * p.d;
            float squared = 0.f;
            for (int f = 0; f < p.d; ++f) squared = fmaF(qi[f] - kj[f], qi[f] - kj[f], squared);
            blockCost += espGroundCost(squared, p.p);
          }
        sum += double(mass) * double(blockCost) / (double(q1 - q0) * double(k1 - k0));
      }
      sh.sum[tid] = sum;
    });
    block.sync();
    block.forEach([&](int tid) {
      if (tid != 0) return;
      double total = 0;
      for (int t = 0; t < kThreads; ++t) total += sh.sum[t];
      p.costs[segment] = float(total);
    });
  }
};

// O = Σ_l share_l·U_l·V (share_l = n_q·w_l) by gathers (docs/operators/esp.md#lazy-path): one thread per
// (query, value column); for each slice the query's rank and group, the blocks its group leads, and the
// rows of V of each block's key group summed.
struct EspOutputKernel {
  static constexpr int kThreads = 128;
  struct Params {
    const float* v;  // [batch][nk][dv]
    int nq, nk, dv, L;
    EspSlices s;
    const float* mass;       // [batch][L][entries]
    const int* queryRank;    // [batch][L][nq]
    const float* shares;     // [batch][L]
    float* out;              // [batch][nq][dv]
  };
  struct Shared {};
  static Grid grid(const Params& p, int batch) {
    return {((long long)p.nq * p.dv + kThreads - 1) / kThreads, batch, 1};
  }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const long long t = (long long)bi.x * kThreads + tid;
      if (t >= (long long)p.nq * p.dv) return;
      const long long item = bi.y;
      const int i = int(t / p.dv), col = int(t % p.dv);
      const float* v = p.v + item * p.nk * p.dv + col;
      float acc = 0.f;
      for (int l = 0; l < p.L; ++l) {
        const long long segment = item * p.L + l;
        const int r = p.queryRank[segment * p.nq + i];
        const int q0 = p.s.queryFirst[segment * p.nq + r], q1 = p.s.queryEnd[segment * p.nq + r];
        const int* kOrder = p.s.keyOrder + segment * p.nk;
        for (int e = p.s.rowStart[q0]; e < p.s.rowStart[q1]; ++e) {
          const float mass = p.mass[segment * p.s.entries + e];
          if (mass == 0.f) continue;
          const int s = p.s.coupling[e].s;
          const int k0 = p.s.keyFirst[segment * p.nk + s], k1 = p.s.keyEnd[segment * p.nk + s];
          float keySum = 0.f;
          for (int c = k0; c < k1; ++c) keySum += v[(long long)kOrder[c] * p.dv];
          acc += p.shares[segment] * mass / (float(q1 - q0) * float(k1 - k0)) * keySum;
        }
      }
      p.out[item * p.nq * p.dv + t] = acc;
    });
  }
};

}  // namespace tl::cuda
