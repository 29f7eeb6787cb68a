#pragma once
// Stable argsort of float or double keys: order[r] is the index of the r-th smallest key, equal keys in
// ascending index order -- the order std::stable_sort gives with `<` on the keys, which the ESP tie groups
// and the ASAP matching are defined by (docs/operators/esp.md#ties). The per-slice sorts of ESP and ASAP
// run L times per operator call, so the sort is the hot path of both at small n: this one sorts
// keys by counting below kRadixMinSize and by a least-significant-digit radix sort of (integer key, index) pairs
// above (for double keys, of their float32 roundings, then within runs of equal roundings), in a caller-owned
// workspace that a loop over slices reuses (no allocation per slice once it has grown). Every path gives the same
// order: it is fully determined by (key, index).
//
// Keys compare as `<` does: -0.0 and +0.0 are equal (tied, so by index), -inf and +inf sort first and last.
// NaN (which the operators' finite inputs never produce) has no place under `<`; here it sorts by its bits,
// positive NaN after +inf and negative NaN before -inf, so the order is still deterministic.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace tl {

namespace argsort_detail {

template <class Key>
using Bits = std::conditional_t<sizeof(Key) == 4, std::uint32_t, std::uint64_t>;

// The unsigned integer whose order is the key's order: IEEE-754 is sign and magnitude, so negative keys
// flip all bits (larger magnitude, smaller key) and non-negative keys set the sign bit.
template <class Key>
Bits<Key> orderedBits(Key key) {
  static_assert(std::is_floating_point_v<Key> && (sizeof(Key) == 4 || sizeof(Key) == 8), "float or double keys");
  if (key == Key(0)) key = Key(0);  // -0.0 == +0.0 under <, so both get +0.0's bits
  Bits<Key> bits;
  std::memcpy(&bits, &key, sizeof bits);
  constexpr Bits<Key> kSign = Bits<Key>(1) << (8 * sizeof(Key) - 1);
  return (bits & kSign) ? Bits<Key>(~bits) : Bits<Key>(bits | kSign);
}

// One key's sort bits and its index: what the radix sort moves.
template <class Bits>
struct SortItem {
  Bits key;
  std::uint32_t index;
};

// Stable LSD radix sort of items by their key bits on 8-bit digits; `scratch` is the second buffer. Each pass is
// stable, so equal keys keep their order in `items`.
template <class Bits>
void radixSortItems(std::vector<SortItem<Bits>>& items, std::vector<SortItem<Bits>>& scratch) {
  const std::size_t n = items.size();
  constexpr int kPasses = int(sizeof(Bits));
  std::array<std::array<std::uint32_t, 256>, kPasses> counts{};
  for (const SortItem<Bits>& item : items)
    for (int p = 0; p < kPasses; ++p) ++counts[size_t(p)][(item.key >> (8 * p)) & 0xFF];
  scratch.resize(n);
  for (int p = 0; p < kPasses; ++p) {
    auto& count = counts[size_t(p)];
    // A digit shared by all keys (the exponent's high byte of keys of one scale) moves nothing: skip it.
    if (count[(items.front().key >> (8 * p)) & 0xFF] == n) continue;
    std::uint32_t start = 0;
    for (auto& c : count) {
      const std::uint32_t size = c;
      c = start;
      start += size;
    }
    for (const SortItem<Bits>& item : items) scratch[count[(item.key >> (8 * p)) & 0xFF]++] = item;
    items.swap(scratch);
  }
}

// Double keys sorted by their float32 roundings first (a radix sort of half the passes), then each run of equal
// roundings put in the order of the doubles themselves. Rounding to float is monotone (x ≤ y gives
// float(x) ≤ float(y)), so only keys of one run can be out of order, and within a run the stable sort left them
// by index: a stable insertion sort by the double keys finishes the order, the one by (key, index). Distinct
// doubles of one rounding are rare among projections of a few thousand tokens (float32 keeps 24 bits), but keys
// beyond float's range or below its smallest denormal all round to ±inf or ±0 (IEEE conversion): a run longer
// than kInsertionRun is sorted by std::stable_sort instead. Keys with a NaN do not come here.
inline constexpr std::size_t kInsertionRun = 32;

template <class Index>
void argsortByFloatRounding(const double* keys, std::size_t n, std::vector<Index>& order,
                            std::vector<SortItem<std::uint32_t>>& items, std::vector<SortItem<std::uint32_t>>& scratch) {
  items.resize(n);
  for (std::size_t i = 0; i < n; ++i) items[i] = {orderedBits(float(keys[i])), std::uint32_t(i)};
  radixSortItems(items, scratch);
  for (std::size_t r = 0; r < n; ++r) order[r] = Index(items[r].index);
  const auto byKey = [&](Index a, Index b) { return keys[std::size_t(a)] < keys[std::size_t(b)]; };
  for (std::size_t first = 0; first < n;) {
    std::size_t end = first + 1;
    while (end < n && items[end].key == items[first].key) ++end;
    if (end - first > kInsertionRun) {
      std::stable_sort(order.begin() + std::ptrdiff_t(first), order.begin() + std::ptrdiff_t(end), byKey);
    } else {
      for (std::size_t r = first + 1; r < end; ++r) {
        const Index moving = order[r];
        std::size_t to = r;
        for (; to > first && byKey(moving, order[to - 1]); --to) order[to] = order[to - 1];
        order[to] = moving;
      }
    }
    first = end;
  }
}

}  // namespace argsort_detail

// Scratch of stableArgsort; keep one per thread and pass it to every call of a loop.
template <class Key>
struct ArgsortWorkspace {
  using Item = argsort_detail::SortItem<argsort_detail::Bits<Key>>;
  std::vector<Item> items, scratch;                                    // the radix sort's two buffers
  std::vector<argsort_detail::SortItem<std::uint32_t>> rounded, roundedScratch;  // double keys' float roundings
  std::vector<std::make_signed_t<argsort_detail::Bits<Key>>> ranked;  // the counting path's keys
};

// Below this size keys are ranked by counting (n² vectorised comparisons), above it radix sorted. Measured on the
// development machine (AVX-512) against std::stable_sort on indices: counting 4.5-5.7x faster at n = 50 (0.3 µs),
// the two ways equal near n = 128 (float) and 160 (double); the radix sort 6-16x faster at n = 4096.
inline constexpr std::size_t kRadixMinSize = 128;

// order ← the stable ascending order of keys[0, n) (resized to n; any integer index type).
template <class Key, class Index>
void stableArgsort(const Key* keys, std::size_t n, std::vector<Index>& order, ArgsortWorkspace<Key>& ws) {
  using Bits = argsort_detail::Bits<Key>;
  using Signed = std::make_signed_t<Bits>;
  if (n > std::size_t(UINT32_MAX)) throw std::length_error("stableArgsort: more than 2^32 keys");
  order.resize(n);
  if (n < kRadixMinSize) {
    // Key i's rank: the smaller keys anywhere plus the equal keys before it, so equal keys keep their index
    // order. Signed integers of the key's width (the ordered bits with the sign bit flipped, and the count)
    // because that is the comparison the vector units have and no lane needs widening.
    constexpr Bits kSign = Bits(1) << (8 * sizeof(Bits) - 1);
    ws.ranked.resize(n);
    const Signed* ranked = ws.ranked.data();
    for (std::size_t i = 0; i < n; ++i) ws.ranked[i] = Signed(argsort_detail::orderedBits(keys[i]) ^ kSign);
    for (std::size_t i = 0; i < n; ++i) {
      const Signed key = ranked[i];
      Signed rank = 0;
      for (std::size_t j = 0; j < n; ++j) rank += ranked[j] < key;
      for (std::size_t j = 0; j < i; ++j) rank += ranked[j] == key;
      order[std::size_t(rank)] = Index(i);
    }
    return;
  }
  if constexpr (sizeof(Key) == 8) {
    // Half the radix passes: about 10 against 14.5 ns per key at n = 1024-16384 (Gaussian keys, one thread, the
    // AMD EPYC development VM).
    bool anyNan = false;
    for (std::size_t i = 0; i < n; ++i) anyNan |= keys[i] != keys[i];
    if (!anyNan) return argsort_detail::argsortByFloatRounding(keys, n, order, ws.rounded, ws.roundedScratch);
  }
  ws.items.resize(n);
  for (std::size_t i = 0; i < n; ++i) ws.items[i] = {argsort_detail::orderedBits(keys[i]), std::uint32_t(i)};
  argsort_detail::radixSortItems(ws.items, ws.scratch);
  for (std::size_t r = 0; r < n; ++r) order[r] = Index(ws.items[r].index);
}

}  // namespace tl
