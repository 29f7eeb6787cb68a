#include "ops/esp/esp_slice.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "common/argsort.h"
#include "cuda/esp_math.h"

namespace tl {
namespace {

// Tokens by ascending value, stable by token index (docs/operators/esp.md#ties). The slices of one operator
// call run on a few threads, each sorting slice after slice: one sort workspace per thread serves them all.
template <class T>
std::vector<int> ascendingOrder(const Vec<T>& values) {
  thread_local ArgsortWorkspace<T> workspace;
  std::vector<int> order;
  stableArgsort(values.data(), size_t(values.size()), order, workspace);
  return order;
}

// First rank of each run of exactly equal values, plus the n sentinel; counts tokens in runs longer than 1.
template <class T>
std::vector<int> tieGroupStarts(const Vec<T>& values, const std::vector<int>& order, int& tiedTokens) {
  const int n = int(order.size());
  std::vector<int> starts;
  for (int r = 0; r < n; ++r)
    if (r == 0 || values(order[r]) != values(order[r - 1])) starts.push_back(r);
  starts.push_back(n);
  for (size_t g = 0; g + 1 < starts.size(); ++g)
    if (starts[g + 1] - starts[g] > 1) tiedTokens += starts[g + 1] - starts[g];
  return starts;
}

std::vector<int> singletonStarts(int n) {
  std::vector<int> starts(n + 1);
  std::iota(starts.begin(), starts.end(), 0);
  return starts;
}

std::vector<int> groupOfRank(const std::vector<int>& starts) {
  std::vector<int> group(starts.back());
  for (size_t g = 0; g + 1 < starts.size(); ++g)
    std::fill(group.begin() + starts[g], group.begin() + starts[g + 1], int(g));
  return group;
}

// Λ's entries summed per (query group, key group): the |R(i) ∩ R(j)|-type masses of ties=split
// (docs/operators/esp.md#ties).
std::vector<HardSlice::Block> groupBlocks(const std::vector<RankCouplingEntry>& coupling,
                                          const std::vector<int>& queryGroup, const std::vector<int>& keyGroup) {
  std::vector<HardSlice::Block> blocks;
  blocks.reserve(coupling.size());
  for (const auto& e : coupling) blocks.push_back({queryGroup[e.r], keyGroup[e.s], e.mass});
  // Both couplings list their entries by rank pair in order and group indices rise with rank, so the blocks
  // arrive sorted: checking costs one pass where sorting cost 2 % of a dense ESP run at n = 4096.
  const auto byGroups = [](const auto& a, const auto& b) {
    return a.queryGroup != b.queryGroup ? a.queryGroup < b.queryGroup : a.keyGroup < b.keyGroup;
  };
  if (!std::is_sorted(blocks.begin(), blocks.end(), byGroups)) std::sort(blocks.begin(), blocks.end(), byGroups);
  // Entries of one pair of groups are adjacent now: their masses are summed in place.
  size_t kept = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (kept > 0 && blocks[kept - 1].queryGroup == blocks[i].queryGroup && blocks[kept - 1].keyGroup == blocks[i].keyGroup)
      blocks[kept - 1].mass += blocks[i].mass;
    else
      blocks[kept++] = blocks[i];
  }
  blocks.resize(kept);
  return blocks;
}

std::vector<int> breakRuleMatching(const std::vector<RankCouplingEntry>& coupling, const std::vector<int>& queryOrder,
                                   const std::vector<int>& keyOrder) {
  std::vector<int> matching(queryOrder.size(), -1);
  std::vector<double> best(queryOrder.size(), 0.0);
  for (const auto& e : coupling) {
    if (e.mass > best[e.r]) {
      best[e.r] = e.mass;
      matching[queryOrder[e.r]] = keyOrder[e.s];
    }
  }
  return matching;
}

}  // namespace

template <class T>
T groundCost(T squaredDistance, double p) {
  return cuda::espGroundCost(squaredDistance, T(p));
}

template <class T>
HardSlice hardSlice(const Vec<T>& queryProjection, const Vec<T>& keyProjection,
                    const std::vector<RankCouplingEntry>& coupling, TiePolicy ties) {
  return hardSliceFromOrders(queryProjection, ascendingOrder(queryProjection), keyProjection,
                             ascendingOrder(keyProjection), coupling, ties);
}

template <class T>
HardSlice hardSliceFromOrders(const Vec<T>& queryProjection, std::vector<int> queryOrder,
                              const Vec<T>& keyProjection, std::vector<int> keyOrder,
                              const std::vector<RankCouplingEntry>& coupling, TiePolicy ties) {
  HardSlice s;
  s.queryOrder = std::move(queryOrder);
  s.keyOrder = std::move(keyOrder);
  s.queryGroupStart = tieGroupStarts(queryProjection, s.queryOrder, s.tiedTokens);
  s.keyGroupStart = tieGroupStarts(keyProjection, s.keyOrder, s.tiedTokens);
  if (ties == TiePolicy::Break) {
    s.queryGroupStart = singletonStarts(int(queryProjection.size()));
    s.keyGroupStart = singletonStarts(int(keyProjection.size()));
  }
  s.blocks = groupBlocks(coupling, groupOfRank(s.queryGroupStart), groupOfRank(s.keyGroupStart));
  s.matching = breakRuleMatching(coupling, s.queryOrder, s.keyOrder);
  return s;
}

namespace {

// Asks for row i of M ahead of its use. The slice visits tokens in rank order, a random order of rows, so the
// hardware prefetcher cannot guess them; a block waiting on two rows from memory dominated the slice's cost.
template <class T>
void prefetchRow(const Mat<T>& M, Eigen::Index i) {
  const char* row = reinterpret_cast<const char*>(M.data() + i * M.cols());
  for (std::size_t byte = 0; byte < std::size_t(M.cols()) * sizeof(T); byte += 64) __builtin_prefetch(row + byte);
}

}  // namespace

template <class T>
T sliceCost(const HardSlice& s, const Mat<T>& Q, const Mat<T>& K, double p) {
  constexpr std::size_t kPrefetchDistance = 8;  // blocks ahead
  T total = 0;
  for (std::size_t i = 0; i < s.blocks.size(); ++i) {
    if (i + kPrefetchDistance < s.blocks.size()) {
      const auto& ahead = s.blocks[i + kPrefetchDistance];
      prefetchRow(Q, s.queryOrder[size_t(s.queryGroupStart[ahead.queryGroup])]);
      prefetchRow(K, s.keyOrder[size_t(s.keyGroupStart[ahead.keyGroup])]);
    }
    const auto& b = s.blocks[i];
    const int q0 = s.queryGroupStart[b.queryGroup], q1 = s.queryGroupStart[b.queryGroup + 1];
    const int k0 = s.keyGroupStart[b.keyGroup], k1 = s.keyGroupStart[b.keyGroup + 1];
    T blockCost = 0;
    for (int r = q0; r < q1; ++r)
      for (int c = k0; c < k1; ++c)
        blockCost += groundCost<T>((Q.row(s.queryOrder[r]) - K.row(s.keyOrder[c])).squaredNorm(), p);
    total += T(b.mass) * blockCost / T((q1 - q0) * (k1 - k0));
  }
  return total;
}

template <class T>
void addSlicePlan(const HardSlice& s, T scale, Eigen::Ref<Mat<T>> plan, Eigen::Index firstRow) {
  forEachSliceEntry(s, scale, [&](Eigen::Index i, Eigen::Index j, T a) {
    if (i >= firstRow && i < firstRow + plan.rows()) plan(i - firstRow, j) += a;
  });
}

template <class T>
void addSliceEntries(const HardSlice& s, T scale, std::vector<PlanEntry<T>>& entries) {
  forEachSliceEntry(s, scale, [&](Eigen::Index i, Eigen::Index j, T a) { entries.push_back({i, j, a}); });
}

template <class T>
void addSliceProduct(const HardSlice& s, T scale, const Mat<T>& V, Mat<T>& output, bool transposed) {
  Vec<T> sourceSum(V.cols());
  for (const auto& b : s.blocks) {
    const int q0 = s.queryGroupStart[b.queryGroup], q1 = s.queryGroupStart[b.queryGroup + 1];
    const int k0 = s.keyGroupStart[b.keyGroup], k1 = s.keyGroupStart[b.keyGroup + 1];
    const T entry = scale * T(b.mass) / T((q1 - q0) * (k1 - k0));
    // A·V: queries of the group receive the sum of the key group's rows; Aᵀ·W: the other way round.
    const std::vector<int>& sourceOrder = transposed ? s.queryOrder : s.keyOrder;
    const std::vector<int>& targetOrder = transposed ? s.keyOrder : s.queryOrder;
    const int s0 = transposed ? q0 : k0, s1 = transposed ? q1 : k1;
    const int t0 = transposed ? k0 : q0, t1 = transposed ? k1 : q1;
    if (s1 - s0 == 1 && t1 - t0 == 1) {  // the common block, one token each side: no sum to form
      output.row(targetOrder[t0]) += entry * V.row(sourceOrder[s0]);
      continue;
    }
    sourceSum.setZero();
    for (int c = s0; c < s1; ++c) sourceSum += V.row(sourceOrder[c]).transpose();
    for (int r = t0; r < t1; ++r) output.row(targetOrder[r]) += entry * sourceSum.transpose();
  }
}

#define TL_ESP_SLICE(T)                                                                                         \
  template T groundCost(T, double);                                                                             \
  template HardSlice hardSlice(const Vec<T>&, const Vec<T>&, const std::vector<RankCouplingEntry>&, TiePolicy); \
  template HardSlice hardSliceFromOrders(const Vec<T>&, std::vector<int>, const Vec<T>&, std::vector<int>,         \
                                         const std::vector<RankCouplingEntry>&, TiePolicy);                     \
  template T sliceCost(const HardSlice&, const Mat<T>&, const Mat<T>&, double);                                 \
  template void addSlicePlan(const HardSlice&, T, Eigen::Ref<Mat<T>>, Eigen::Index);                           \
  template void addSliceEntries(const HardSlice&, T, std::vector<PlanEntry<T>>&);                                                     \
  template void addSliceProduct(const HardSlice&, T, const Mat<T>&, Mat<T>&, bool);
TL_ESP_SLICE(float)
TL_ESP_SLICE(double)
#undef TL_ESP_SLICE

}  // namespace tl
