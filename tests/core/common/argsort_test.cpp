// stableArgsort against std::stable_sort with `<` on the keys (the order the ESP ties and the ASAP matching
// are defined by), on all of its paths (counting below kRadixMinSize, radix sort above, for double keys by their
// float roundings first).
#include "common/argsort.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace tl {
namespace {

template <class Key>
std::vector<int> referenceOrder(const std::vector<Key>& keys) {
  std::vector<int> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[size_t(a)] < keys[size_t(b)]; });
  return order;
}

// Random keys drawn from a few values (many ties), with signed zeros and infinities mixed in.
template <class Key>
std::vector<Key> keysWithTies(size_t n, std::mt19937& rng) {
  const Key inf = std::numeric_limits<Key>::infinity();
  const std::vector<Key> special = {Key(0), Key(-0.0), inf, -inf, std::numeric_limits<Key>::denorm_min(),
                                    -std::numeric_limits<Key>::denorm_min(), std::numeric_limits<Key>::max(),
                                    std::numeric_limits<Key>::lowest()};
  std::normal_distribution<double> normal(0.0, 3.0);
  std::uniform_int_distribution<int> kind(0, 9);
  std::vector<Key> keys(n);
  for (auto& k : keys) {
    const int c = kind(rng);
    if (c == 0) k = special[size_t(std::uniform_int_distribution<size_t>(0, special.size() - 1)(rng))];
    else if (c < 5) k = Key(std::round(normal(rng)));  // integers: frequent exact ties, both signs
    else k = Key(normal(rng));
  }
  return keys;
}

template <class Key>
void expectMatchesStableSort() {
  std::mt19937 rng(7);
  ArgsortWorkspace<Key> ws;  // reused across sizes, as the slice loops reuse it
  for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(5), size_t(50), kRadixMinSize - 1, kRadixMinSize, size_t(255),
                   size_t(256), size_t(1000), size_t(4096)}) {
    for (int trial = 0; trial < 5; ++trial) {
      const std::vector<Key> keys = keysWithTies<Key>(n, rng);
      std::vector<int> order;
      stableArgsort(keys.data(), keys.size(), order, ws);
      ASSERT_EQ(order, referenceOrder(keys)) << "n = " << n << ", trial " << trial;
    }
  }
}

TEST(StableArgsort, FloatMatchesStableSortWithTiesZerosAndInfinities) { expectMatchesStableSort<float>(); }
TEST(StableArgsort, DoubleMatchesStableSortWithTiesZerosAndInfinities) { expectMatchesStableSort<double>(); }

// Double keys are radix sorted by their float32 roundings and then within runs of equal roundings: distinct doubles
// of one rounding, and equal doubles among them, in short runs (insertion) and one run of all keys (stable_sort).
TEST(StableArgsort, DoublesOfOneFloatRoundingSortByTheirOwnValue) {
  std::mt19937 rng(11);
  ArgsortWorkspace<double> ws;
  for (size_t n : {size_t(200), size_t(3000)}) {
    std::uniform_int_distribution<int> offset(0, 4);
    std::uniform_int_distribution<size_t> base(0, n / 8);
    std::vector<double> shortRuns(n), oneRun(n);
    for (size_t i = 0; i < n; ++i) {
      shortRuns[i] = double(base(rng)) + 1e-9 * offset(rng);  // about 8 keys per rounding, 5 distinct values
      oneRun[i] = 1.0 + 1e-12 * offset(rng);                  // every key rounds to 1.0f
    }
    for (const auto& keys : {shortRuns, oneRun}) {
      std::vector<int> order;
      stableArgsort(keys.data(), keys.size(), order, ws);
      ASSERT_EQ(order, referenceOrder(keys)) << "n = " << n;
    }
  }
}

TEST(StableArgsort, SignedZerosAreOneTieGroupInIndexOrder) {
  ArgsortWorkspace<double> ws;
  for (size_t n : {size_t(6), size_t(600)}) {  // both paths
    std::vector<double> keys(n);
    for (size_t i = 0; i < n; ++i) keys[i] = (i % 2) ? -0.0 : 0.0;
    keys[n - 1] = -1.0;
    std::vector<long> order;
    stableArgsort(keys.data(), n, order, ws);
    EXPECT_EQ(order[0], long(n - 1));
    for (size_t r = 1; r < n; ++r) EXPECT_EQ(order[r], long(r - 1)) << "n = " << n;
  }
}

TEST(StableArgsort, NanSortsDeterministicallyAfterPositiveInfinity) {
  // Not an input the operators produce (their inputs are checked finite); the order is still defined.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  ArgsortWorkspace<float> ws;
  for (size_t n : {size_t(4), size_t(400)}) {
    std::vector<float> keys(n, 1.0f);
    keys[0] = nan;
    keys[1] = inf;
    keys[2] = -inf;
    std::vector<int> order;
    stableArgsort(keys.data(), n, order, ws);
    EXPECT_EQ(order.front(), 2);
    EXPECT_EQ(order[n - 2], 1);
    EXPECT_EQ(order.back(), 0);
  }
}

}  // namespace
}  // namespace tl
