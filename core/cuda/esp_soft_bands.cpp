#include "cuda/esp_soft_bands.h"

#include <algorithm>

namespace tl::cuda {

SoftSortBands softSortBands(const float* sorted, int n, float reach) {
  SoftSortBands b;
  b.lo.resize(size_t(n));
  b.len.resize(size_t(n));
  int lo = 0, hi = 0;
  for (int r = 0; r < n; ++r) {
    while (sorted[r] - sorted[lo] > reach) ++lo;
    hi = std::max(hi, r);
    while (hi + 1 < n && sorted[hi + 1] - sorted[r] <= reach) ++hi;
    b.lo[size_t(r)] = lo;
    b.len[size_t(r)] = hi - lo + 1;
  }
  return b;
}

TileEntries tileEntries(const SoftSortBands& bands, const std::vector<int>& ranks) {
  const int n = int(bands.lo.size()), count = int(ranks.size());
  // Running max from the front and min from the back of the ranks: monotone even where the ranks step back.
  std::vector<int> lastColumnBefore(static_cast<size_t>(count)), firstColumnAfter(static_cast<size_t>(count));
  for (int e = 0, top = 0; e < count; ++e) {
    top = std::max(top, ranks[size_t(e)]);
    lastColumnBefore[size_t(e)] = bands.lo[size_t(top)] + bands.len[size_t(top)] - 1;
  }
  for (int e = count - 1, bottom = n - 1; e >= 0; --e) {
    bottom = std::min(bottom, ranks[size_t(e)]);
    firstColumnAfter[size_t(e)] = bands.lo[size_t(bottom)];
  }
  TileEntries t;
  for (int t0 = 0; t0 < n; t0 += kEspTile) {
    const int t1 = std::min(n, t0 + kEspTile);
    // Entries before `first` end left of the tile; entries from `end` on start right of it.
    t.first.push_back(int(std::partition_point(lastColumnBefore.begin(), lastColumnBefore.end(),
                                               [&](int c) { return c < t0; }) -
                          lastColumnBefore.begin()));
    t.end.push_back(int(std::partition_point(firstColumnAfter.begin(), firstColumnAfter.end(),
                                             [&](int c) { return c < t1; }) -
                        firstColumnAfter.begin()));
  }
  return t;
}

TileSchedule tileSchedule(const TileEntries& queryTiles, const TileEntries& keyTiles) {
  TileSchedule s;
  for (size_t a = 0; a < queryTiles.first.size(); ++a) {
    // Both ends of the key tiles' ranges grow with the tile: the tiles meeting [first, end) are contiguous.
    const auto from = std::partition_point(keyTiles.end.begin(), keyTiles.end.end(),
                                           [&](int end) { return end <= queryTiles.first[a]; });
    const auto to = std::partition_point(keyTiles.first.begin(), keyTiles.first.end(),
                                         [&](int first) { return first < queryTiles.end[a]; });
    const int keyFirst = int(from - keyTiles.end.begin());
    const int count = std::max(0, int(to - keyTiles.first.begin()) - keyFirst);
    s.keyFirst.push_back(keyFirst);
    s.keyCount.push_back(count);
    s.maxCount = std::max(s.maxCount, count);
  }
  return s;
}

}  // namespace tl::cuda
