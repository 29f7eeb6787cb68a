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

std::vector<int> singletonStarts(int n) {
  std::vector<int> starts(n + 1);
  std::iota(starts.begin(), starts.end(), 0);
  return starts;
}

// First rank of each run of exactly equal values, plus the n sentinel; counts tokens in runs longer than 1. The
// values are gathered in rank order first and searched for any equal neighbours: both loops vectorise, and most
// slices have no tie, so their groups are the ranks themselves.
template <class T>
std::vector<int> tieGroupStarts(const Vec<T>& values, const std::vector<int>& order, int& tiedTokens) {
  const int n = int(order.size());
  thread_local std::vector<T> sorted;
  sorted.resize(size_t(n));
  for (int r = 0; r < n; ++r) sorted[size_t(r)] = values(order[size_t(r)]);
  bool anyTie = false;
  for (int r = 1; r < n; ++r) anyTie |= sorted[size_t(r)] == sorted[size_t(r - 1)];
  if (!anyTie) return singletonStarts(n);
  std::vector<int> starts(size_t(n) + 1);
  int groups = 0;
  for (int r = 0; r < n; ++r) {
    if (r > 0 && sorted[size_t(r)] == sorted[size_t(r - 1)]) continue;
    if (groups > 0 && r - starts[size_t(groups - 1)] > 1) tiedTokens += r - starts[size_t(groups - 1)];
    starts[size_t(groups++)] = r;
  }
  if (groups > 0 && n - starts[size_t(groups - 1)] > 1) tiedTokens += n - starts[size_t(groups - 1)];
  starts[size_t(groups++)] = n;
  starts.resize(size_t(groups));
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

// Without ties every group is one rank: Λ's entries are the blocks, already ordered and distinct.
std::vector<HardSlice::Block> rankBlocks(const std::vector<RankCouplingEntry>& coupling) {
  std::vector<HardSlice::Block> blocks(coupling.size());
  for (size_t i = 0; i < coupling.size(); ++i) blocks[i] = {coupling[i].r, coupling[i].s, coupling[i].mass};
  return blocks;
}

// ‖x − y‖² of two rows of n features: a packet of partial sums, added across once at the end. (Written out
// because the compiler's own reductions ended in a chain of scalar adds per pair, a slice's main cost.)
template <class T>
T squaredDistance(const T* x, const T* y, Eigen::Index n) {
  using namespace Eigen::internal;
  using Packet = typename packet_traits<T>::type;
  constexpr Eigen::Index kWidth = packet_traits<T>::size;
  Packet sum = pset1<Packet>(T(0));
  Eigen::Index c = 0;
  for (; c + kWidth <= n; c += kWidth) {
    const Packet difference = psub(ploadu<Packet>(x + c), ploadu<Packet>(y + c));
    sum = pmadd(difference, difference, sum);
  }
  T total = predux(sum);
  for (; c < n; ++c) total += (x[c] - y[c]) * (x[c] - y[c]);
  return total;
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
  s.blocks = withoutTieGroups(s) ? rankBlocks(coupling)
                                  : groupBlocks(coupling, groupOfRank(s.queryGroupStart), groupOfRank(s.keyGroupStart));
  s.matching = breakRuleMatching(coupling, s.queryOrder, s.keyOrder);
  return s;
}

namespace {

// Above this much of Q and K together, a slice's pairs ask for the rows of the pair kPrefetchDistance blocks ahead:
// the rows then come from L3 or memory, in the projections' order. One thread on the AMD EPYC development VM (1 MiB
// L2 per core), float32, best of six runs of the lazy path: 335 → 271 ms at n = 32768; float64 at n = 8192: 52.7 →
// 48.4 ms. Below it the rows stay in L2 and the prefetches only cost instructions (n = 1024: 7 % slower), and
// float64 at n = 4096 (4 MiB) gained nothing.
constexpr std::size_t kPrefetchAboveBytes = std::size_t(4) << 20;

// sum.add(q, k, coefficient) for every pair of rows the slice couples, with D_l = Σ coefficient·‖q − k‖^p (a
// block's mass spread over its |g_q|·|g_k| pairs), into a copy of `sum` that is returned: a local the
// compiler keeps in registers, where a sum reached by reference went through memory on every pair.
template <class T, class Sum>
Sum sumOverCostPairs(const HardSlice& s, const Mat<T>& Q, const Mat<T>& K, Sum sum) {
  constexpr std::size_t kPrefetchDistance = 8;  // blocks ahead
  const bool prefetch = std::size_t(Q.size() + K.size()) * sizeof(T) > kPrefetchAboveBytes;
  // Without ties every group is one rank, so a block is one pair of ranks with its whole mass: no group bounds
  // to read and no division per pair.
  const bool untied = withoutTieGroups(s);
  for (std::size_t i = 0; i < s.blocks.size(); ++i) {
    if (prefetch && i + kPrefetchDistance < s.blocks.size()) {
      const auto& ahead = s.blocks[i + kPrefetchDistance];
      prefetchRow(Q, s.queryOrder[s.queryGroupStart[ahead.queryGroup]]);
      prefetchRow(K, s.keyOrder[s.keyGroupStart[ahead.keyGroup]]);
    }
    const auto& b = s.blocks[i];
    if (untied) {
      sum.add(Q.row(s.queryOrder[b.queryGroup]).data(), K.row(s.keyOrder[b.keyGroup]).data(), b.mass);
      continue;
    }
    const int q0 = s.queryGroupStart[b.queryGroup], q1 = s.queryGroupStart[b.queryGroup + 1];
    const int k0 = s.keyGroupStart[b.keyGroup], k1 = s.keyGroupStart[b.keyGroup + 1];
    const double coefficient = b.mass / double((q1 - q0) * (k1 - k0));
    for (int r = q0; r < q1; ++r)
      for (int c = k0; c < k1; ++c) sum.add(Q.row(s.queryOrder[r]).data(), K.row(s.keyOrder[c]).data(), coefficient);
  }
  return sum;
}

// Σ coefficient·‖x − y‖² over pairs of rows of n features. p = 2 needs no root, so no pair is added across on
// its own: the squares of consecutive pairs of one coefficient (all of them without ties, n_q = n_k) go into
// two packets of partial sums in T, and every kPairsPerChunk pairs, or when the coefficient changes, those
// are added across and, times the coefficient in double, into the total. Double as the device's partial sums
// are: the slice gathers up to n_q·n_k terms, and float32 would lose digits that the slice weights
// (softmax(−tau·D)) amplify by tau·D.
template <class T>
class WeightedSquaredDistances {
 public:
  explicit WeightedSquaredDistances(Eigen::Index n) : n_(n) { restartChunk(); }
  void add(const T* x, const T* y, double coefficient) {
    using namespace Eigen::internal;
    if (coefficient != coefficient_ || pairs_ == kPairsPerChunk) {
      closeChunk();
      coefficient_ = coefficient;
    }
    ++pairs_;
    auto square = [&](Eigen::Index c, Packet& partial) {
      const Packet difference = psub(ploadu<Packet>(x + c), ploadu<Packet>(y + c));
      partial = pmadd(difference, difference, partial);
    };
    Eigen::Index c = 0;
    for (; c + 2 * kWidth <= n_; c += 2 * kWidth) {
      square(c, partial_[0]);
      square(c + kWidth, partial_[1]);
    }
    if (c + kWidth <= n_) {
      square(c, partial_[0]);
      c += kWidth;
    }
    for (; c < n_; ++c) tail_ += (x[c] - y[c]) * (x[c] - y[c]);
  }
  T total() {
    closeChunk();
    return T(total_);
  }

 private:
  using Packet = typename Eigen::internal::packet_traits<T>::type;
  static constexpr Eigen::Index kWidth = Eigen::internal::packet_traits<T>::size;
  static constexpr int kPairsPerChunk = 16;

  void restartChunk() {
    partial_[0] = partial_[1] = Eigen::internal::pset1<Packet>(T(0));
    tail_ = 0;
    pairs_ = 0;
  }
  void closeChunk() {
    if (pairs_ > 0)
      total_ += coefficient_ * double(Eigen::internal::predux(Eigen::internal::padd(partial_[0], partial_[1])) + tail_);
    restartChunk();
  }

  Eigen::Index n_;
  Packet partial_[2];
  T tail_;
  int pairs_;
  double coefficient_ = 0, total_ = 0;
};

// Σ coefficient·‖x − y‖^p for other p: each pair's own root or power, summed in double.
template <class T>
struct WeightedGroundCosts {
  Eigen::Index n;
  double p, sum = 0;
  void add(const T* x, const T* y, double coefficient) {
    sum += coefficient * double(groundCost<T>(squaredDistance(x, y, n), p));
  }
  T total() const { return T(sum); }
};

}  // namespace

template <class T>
T sliceCost(const HardSlice& s, const Mat<T>& Q, const Mat<T>& K, double p) {
  if (p == 2) return sumOverCostPairs(s, Q, K, WeightedSquaredDistances<T>(Q.cols())).total();
  return sumOverCostPairs(s, Q, K, WeightedGroundCosts<T>{Q.cols(), p}).total();
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

namespace {

// out[0, n) += scale·row[0, n), one fused multiply-add per entry: the arithmetic of the indexed product
// (slice_rows.h sliceRowProduct), which sums the same terms in the same order in registers.
template <class T>
void addScaledRow(T* out, T scale, const T* row, Eigen::Index n) {
  using namespace Eigen::internal;
  using Packet = typename packet_traits<T>::type;
  constexpr Eigen::Index W = packet_traits<T>::size;
  const Packet s = pset1<Packet>(scale);
  Eigen::Index c = 0;
  for (; c + W <= n; c += W) pstoreu(out + c, pmadd(s, ploadu<Packet>(row + c), ploadu<Packet>(out + c)));
  for (; c < n; ++c) out[c] = std::fma(scale, row[c], out[c]);
}

}  // namespace

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
      addScaledRow(output.row(targetOrder[t0]).data(), entry, V.row(sourceOrder[s0]).data(), V.cols());
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
