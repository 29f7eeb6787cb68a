#pragma once
// Stable argsort of float or double keys: order[r] is the index of the r-th smallest key, equal keys in
// ascending index order -- the order std::stable_sort gives with `<` on the keys, which the ESP tie groups
// and the ASAP matching are defined by (docs/operators/esp.md#ties). The per-slice sorts of ESP and ASAP
// run L times per operator call, so the sort is the hot path of both at small n: this one sorts
// keys by counting below kRadixMinSize and by a least-significant-digit radix sort of (integer key, index) pairs
// above, in a caller-owned workspace that a loop over slices reuses (no allocation per slice once
// it has grown). Both paths give the same order: it is fully determined by (key, index).
//
// Keys compare as `<` does: -0.0 and +0.0 are equal (tied, so by index), -inf and +inf sort first and last.
// NaN (which the operators' finite inputs never produce) has no place under `<`; here it sorts by its bits,
// positive NaN after +inf and negative NaN before -inf, so the order is still deterministic.
#include <array>
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

}  // namespace argsort_detail

// Scratch of stableArgsort; keep one per thread and pass it to every call of a loop.
template <class Key>
struct ArgsortWorkspace {
  struct Item {
    argsort_detail::Bits<Key> key;
    std::uint32_t index;
  };
  std::vector<Item> items, scratch;                                  // the radix sort's two buffers
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
  using Item = typename ArgsortWorkspace<Key>::Item;
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
  // LSD radix sort on 8-bit digits: each pass is stable, so equal keys keep their ascending index order.
  ws.items.resize(n);
  for (std::size_t i = 0; i < n; ++i) ws.items[i] = {argsort_detail::orderedBits(keys[i]), std::uint32_t(i)};
  constexpr int kPasses = int(sizeof(Bits));
  std::array<std::array<std::uint32_t, 256>, kPasses> counts{};
  for (const Item& item : ws.items)
    for (int p = 0; p < kPasses; ++p) ++counts[size_t(p)][(item.key >> (8 * p)) & 0xFF];
  ws.scratch.resize(n);
  for (int p = 0; p < kPasses; ++p) {
    auto& count = counts[size_t(p)];
    // A digit shared by all keys (the exponent's high byte of keys of one scale) moves nothing: skip it.
    if (count[(ws.items.front().key >> (8 * p)) & 0xFF] == n) continue;
    std::uint32_t start = 0;
    for (auto& c : count) {
      const std::uint32_t size = c;
      c = start;
      start += size;
    }
    for (const Item& item : ws.items) ws.scratch[count[(item.key >> (8 * p)) & 0xFF]++] = item;
    ws.items.swap(ws.scratch);
  }
  for (std::size_t r = 0; r < n; ++r) order[r] = Index(ws.items[r].index);
}

}  // namespace tl
