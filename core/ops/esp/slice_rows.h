#pragma once
// Hard ESP's plan A = Σ_l n_q·w_l·U_l with its entries grouped by row (or, transposed, by column), each row's
// entries in slice order: the form in which A·V, Aᵀ·W and the dense rows are formed one row at a time, every
// row by one thread (docs/operators/esp.md#lazy-path).
//
// Why: slice by slice (esp_slice.h), every slice scatters one entry into each row of the result, so each
// thread walks all L·n entries (or one thread does all the work) and each entry lands in a different row far
// from the last. By row, a thread reads only its rows' entries and its output row stays in L1 while L of them
// are added to it. Each entry (i, j) still receives the slices' shares in slice order, so the dense rows are
// the slice-by-slice loops' bits on any thread count, and so are the products where no slice ties (a tied
// block's product sums its group's rows first there, and adds each pair here: equal to rounding).
//
// A tie group spreads its block's mass over |g_q|·|g_k| pairs, so tied slices add more entries than one per
// coupled rank pair (float32 projections of a few thousand Gaussian tokens tie in most runs, by a pair or
// two); up to kEntriesPerPair entries per rank pair on average are indexed, and beyond that (a slice where
// most tokens tie: n² pairs in the worst case) the plan keeps the block loops of esp_slice.h.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "common/matrix.h"
#include "common/parallel.h"
#include "common/streaming_store.h"
#include "ops/esp/esp_slice.h"

namespace tl {

template <class T>
struct SliceRows {
  struct Entry {
    // Left unset when made: the index's L·n entries are each written once, after the vector is sized.
    Entry() {}  // NOLINT(modernize-use-equals-default): `= default` would zero them in resize
    Entry(int index, T value) : index(index), value(value) {}
    int index;  // the key (by row) or the query (transposed)
    T value;    // n_q·w_l·Λ mass of the pair
  };
  std::vector<Eigen::Index> start;  // row r's entries are [start[r], start[r + 1])
  std::vector<Entry> entries;
  Eigen::Index rows() const { return Eigen::Index(start.size()) - 1; }
  Eigen::Index cols = 0;
};

inline constexpr std::size_t kEntriesPerPair = 4;

// True when the untied slices have exactly one entry in each row: a coupling that joins each rank of the rows'
// side to one rank of the other (n_q = n_k: Λ = I/n). Every untied slice has one block per pair of ranks the
// coupling joins, the same pairs in all of them, so one of them says it for all. (Counting a slice's entries is
// not enough: with tied queries and the interpolation coupling one key can get two entries while another gets
// none.)
inline bool couplingOnePerRow(const HardSlice& untied, Eigen::Index rows, bool transposed) {
  std::vector<int> entries(size_t(rows), 0);
  for (const HardSlice::Block& b : untied.blocks) ++entries[size_t(transposed ? b.keyGroup : b.queryGroup)];
  return std::all_of(entries.begin(), entries.end(), [](int count) { return count == 1; });
}

// What every untied slice of a call has in common, since they share the coupling: one entry in each row (each
// column with `transposed`), and, besides, every pair of ranks the coupling joins of the same mass (n_q = n_k: 1/n),
// so that all of a slice's entries are one value (asked only where the first holds). Both false when no slice is
// untied.
struct UntiedSlicesShape {
  bool onePerRow = false, oneMass = false;
};

inline UntiedSlicesShape untiedSlicesShape(const std::vector<HardSlice>& slices, Eigen::Index rows, bool transposed) {
  const auto untied = std::find_if(slices.begin(), slices.end(), withoutTieGroups);
  if (untied == slices.end() || !couplingOnePerRow(*untied, rows, transposed)) return {};
  const double mass = untied->blocks.empty() ? 0 : untied->blocks.front().mass;
  return {true, std::all_of(untied->blocks.begin(), untied->blocks.end(),
                            [&](const HardSlice::Block& b) { return b.mass == mass; })};
}

// An untied slice's entry with share n_q·w_l when its coupling is of one mass: forEachSliceEntry's for a block of
// one pair (its division by 1·1 is exact).
template <class T>
T onePairEntry(const HardSlice& untied, T share) {
  return share * T(untied.blocks.front().mass);
}

// The entries of Σ_l n_q·w_l·U_l by query row (by key column with `transposed`), each row's in slice order (a
// counting sort of forEachSliceEntry's entries, slice by slice); each value is the one the block loops add.
// Nothing when there are more than kEntriesPerPair times the slices' coupled rank pairs.
//
// Slice l's entries of row r follow those of the slices before it: their offset in the row, before[l][r], is
// the count of those entries. Slices with one entry per row (all of them without ties) need no counting; the
// others are counted, and all placed, slice by slice on all cores (each slice writes its own places), the
// offsets summed over l row by row.
template <class T>
std::optional<SliceRows<T>> sliceRows(const std::vector<HardSlice>& slices, const Vec<T>& weights, Eigen::Index nq,
                                      Eigen::Index nk, bool transposed) {
  std::size_t pairs = 0, total = 0;
  for (const HardSlice& s : slices) {
    pairs += s.blocks.size();
    total += sliceEntryCount(s);
  }
  if (total > kEntriesPerPair * pairs) return std::nullopt;
  SliceRows<T> out;
  const Eigen::Index rows = transposed ? nk : nq;
  out.cols = transposed ? nq : nk;
  const auto L = Eigen::Index(slices.size());
  const UntiedSlicesShape untied = untiedSlicesShape(slices, rows, transposed);
  // By query row, such a slice's one entry in row i is the key its break-rule matching gives i (the only key
  // i's rank is coupled to), and when every pair of the coupling has the same mass all its entries are one
  // value: the slice's entries are then placed row after row, reading the matching in order, where the walk
  // over the slice's pairs scatters them across all rows.
  const bool untiedByMatching = untied.onePerRow && untied.oneMass && !transposed;
  std::vector<char> onePerRow(static_cast<size_t>(L));
  for (Eigen::Index l = 0; l < L; ++l) onePerRow[size_t(l)] = untied.onePerRow && withoutTieGroups(slices[size_t(l)]);

  // Only counted slices read their counts before writing them: each zeroes its own, on its core.
  const std::unique_ptr<int[]> before(new int[size_t(L) * size_t(rows)]);
  auto offsets = [&](Eigen::Index l) { return before.get() + l * rows; };
  const T noScale = T(1);
  parallelFor(L, double(total), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index l = first; l < end; ++l) {
      int* count = offsets(l);
      if (onePerRow[size_t(l)]) continue;
      std::fill(count, count + rows, 0);
      forEachSliceEntry(slices[size_t(l)], noScale, [&](Eigen::Index i, Eigen::Index j, T) { ++count[transposed ? j : i]; });
    }
  });
  out.start.assign(size_t(rows) + 1, 0);
  parallelFor(rows, double(L) * double(rows), [&](Eigen::Index first, Eigen::Index end) {
    Eigen::Index* inRow = out.start.data() + 1;  // each row's running count, then its total
    for (Eigen::Index l = 0; l < L; ++l) {
      int* offset = offsets(l);
      const bool one = onePerRow[size_t(l)];
      for (Eigen::Index r = first; r < end; ++r) {
        const int count = one ? 1 : offset[r];
        offset[r] = int(inRow[r]);
        inRow[r] += count;
      }
    }
  });
  for (size_t r = 0; r < size_t(rows); ++r) out.start[r + 1] += out.start[r];
  out.entries.resize(total);
  if (untiedByMatching) {
    // Tiles of rows whose entries stay in L2 while every slice adds its entry to each of them.
    constexpr Eigen::Index kTileRows = 256;
    const Eigen::Index tiles = (rows + kTileRows - 1) / kTileRows;
    parallelFor(tiles, double(L) * double(rows), [&](Eigen::Index firstTile, Eigen::Index endTile) {
      for (Eigen::Index tile = firstTile; tile < endTile; ++tile) {
        const Eigen::Index begin = tile * kTileRows, end = std::min(rows, begin + kTileRows);
        for (Eigen::Index l = 0; l < L; ++l) {
          if (!onePerRow[size_t(l)]) continue;
          const HardSlice& s = slices[size_t(l)];
          const T value = onePairEntry(s, T(nq) * weights(l));
          const int* offset = offsets(l);
          for (Eigen::Index r = begin; r < end; ++r)
            out.entries[size_t(out.start[size_t(r)] + offset[r])] = {s.matching[size_t(r)], value};
        }
      }
    });
  }
  parallelFor(L, double(total), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index l = first; l < end; ++l) {
      if (untiedByMatching && onePerRow[size_t(l)]) continue;
      int* offset = offsets(l);
      forEachSliceEntry(slices[size_t(l)], T(nq) * weights(l), [&](Eigen::Index i, Eigen::Index j, T a) {
        const Eigen::Index r = transposed ? j : i;
        out.entries[size_t(out.start[size_t(r)] + offset[r]++)] = {int(transposed ? i : j), a};
      });
    }
  });
  return out;
}

// out[c, c + Packets·W) ← Σ over entries [first, last) of value·M(index, c …), summed in registers and stored
// once (summed in the output row, every entry would wait on the store of the one before).
template <int Packets, class T>
void sliceRowColumns(const SliceRows<T>& a, Eigen::Index first, Eigen::Index last, const Mat<T>& M, Eigen::Index c,
                     T* out) {
  using namespace Eigen::internal;
  using Packet = typename packet_traits<T>::type;
  constexpr Eigen::Index W = packet_traits<T>::size, kPrefetchDistance = 8;  // entries ahead
  Packet sum[Packets];
  for (int k = 0; k < Packets; ++k) sum[k] = pset1<Packet>(T(0));
  for (Eigen::Index e = first; e < last; ++e) {
    if (c == 0 && e + kPrefetchDistance < last) prefetchRow(M, a.entries[size_t(e + kPrefetchDistance)].index);
    const Packet value = pset1<Packet>(a.entries[size_t(e)].value);
    const T* row = M.data() + Eigen::Index(a.entries[size_t(e)].index) * M.cols() + c;
    for (int k = 0; k < Packets; ++k) sum[k] = pmadd(value, ploadu<Packet>(row + k * W), sum[k]);
  }
  for (int k = 0; k < Packets; ++k) pstoreu(out + c + k * W, sum[k]);
}

// out[0, M.cols()) ← row r of the product, Σ over the row's entries of value·M.row(index) in entry order: by
// blocks of four packets of columns, then single packets, then single columns. Each term is one fused
// multiply-add, as in the block loops' addScaledRow (esp_slice.cpp), so where no slice ties both give the same
// bits.
template <class T>
void sliceRowProduct(const SliceRows<T>& a, Eigen::Index r, const Mat<T>& M, T* out) {
  constexpr Eigen::Index W = Eigen::internal::packet_traits<T>::size;
  const Eigen::Index first = a.start[size_t(r)], last = a.start[size_t(r) + 1], columns = M.cols();
  Eigen::Index c = 0;
  for (; c + 4 * W <= columns; c += 4 * W) sliceRowColumns<4>(a, first, last, M, c, out);
  for (; c + W <= columns; c += W) sliceRowColumns<1>(a, first, last, M, c, out);
  for (; c < columns; ++c) {
    T sum = 0;
    for (Eigen::Index e = first; e < last; ++e) sum = std::fma(a.entries[size_t(e)].value, M(a.entries[size_t(e)].index, c), sum);
    out[c] = sum;
  }
}

// The rows × M.cols() product of these rows with M (A·M, or Aᵀ·M when they were built transposed), rows split
// across threads.
template <class T>
Mat<T> sliceRowsProduct(const SliceRows<T>& a, const Mat<T>& M) {
  Mat<T> out(a.rows(), M.cols());
  parallelFor(a.rows(), double(a.entries.size()) * double(M.cols()), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index r = first; r < end; ++r) sliceRowProduct(a, r, M, out.row(r).data());
  });
  return out;
}

// Rows [first, first + count) of the dense matrix (the plan when built by row), rows split across threads: each
// row zeroed and its entries added while it is in cache (common/streaming_store.h).
template <class T>
void sliceRowsDense(const SliceRows<T>& a, Eigen::Index first, Mat<T>& block) {
  parallelFor(block.rows(), double(block.rows()) * double(a.cols), [&](Eigen::Index begin, Eigen::Index end) {
    writeDenseRows(block, begin, end, [&](Eigen::Index r, T* row) {
      std::fill(row, row + a.cols, T(0));
      for (Eigen::Index e = a.start[size_t(first + r)]; e < a.start[size_t(first + r) + 1]; ++e)
        row[a.entries[size_t(e)].index] += a.entries[size_t(e)].value;
    });
  });
}

}  // namespace tl
