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
#include <cstddef>
#include <optional>
#include <vector>

#include "common/matrix.h"
#include "common/parallel.h"
#include "ops/esp/esp_slice.h"

namespace tl {

template <class T>
struct SliceRows {
  struct Entry {
    int index;  // the key (by row) or the query (transposed)
    T value;    // n_q·w_l·Λ mass of the pair
  };
  std::vector<Eigen::Index> start;  // row r's entries are [start[r], start[r + 1])
  std::vector<Entry> entries;
  Eigen::Index rows() const { return Eigen::Index(start.size()) - 1; }
  Eigen::Index cols = 0;
};

inline constexpr std::size_t kEntriesPerPair = 4;

// True when every slice has exactly one entry in each of the `rows` rows: the usual case of n_q = n_k without
// ties, where row r's entry of slice l has the fixed place r·L + l and the slices can be written in parallel.
// A slice without tie groups has one block per pair of ranks its coupling joins, the same pairs in every slice,
// so the first slice's blocks say it for all. (Counting entries is not enough: with tied queries and the
// interpolation coupling one key can get two entries while another gets none.)
inline bool oneEntryPerRow(const std::vector<HardSlice>& slices, Eigen::Index rows, bool transposed) {
  const auto withoutTies = [](const HardSlice& s) {
    return s.queryGroupStart.size() == s.queryOrder.size() + 1 && s.keyGroupStart.size() == s.keyOrder.size() + 1;
  };
  if (slices.empty() || !std::all_of(slices.begin(), slices.end(), withoutTies)) return false;
  std::vector<int> entries(size_t(rows), 0);
  for (const HardSlice::Block& b : slices.front().blocks) ++entries[size_t(transposed ? b.keyGroup : b.queryGroup)];
  return std::all_of(entries.begin(), entries.end(), [](int count) { return count == 1; });
}

// The entries of Σ_l n_q·w_l·U_l by query row (by key column with `transposed`), each row's in slice order (a
// counting sort of forEachSliceEntry's entries, slice by slice); each value is the one the block loops add.
// Nothing when there are more than kEntriesPerPair times the slices' coupled rank pairs.
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
  auto share = [&](size_t l) { return T(nq) * weights(Eigen::Index(l)); };
  if (oneEntryPerRow(slices, rows, transposed)) {
    const auto L = Eigen::Index(slices.size());
    out.start.resize(size_t(rows) + 1);
    for (Eigen::Index r = 0; r <= rows; ++r) out.start[size_t(r)] = r * L;
    out.entries.resize(total);
    parallelFor(L, double(total), [&](Eigen::Index first, Eigen::Index end) {
      for (Eigen::Index l = first; l < end; ++l)
        forEachSliceEntry(slices[size_t(l)], share(size_t(l)), [&](Eigen::Index i, Eigen::Index j, T a) {
          out.entries[size_t((transposed ? j : i) * L + l)] = {int(transposed ? i : j), a};
        });
    });
    return out;
  }
  out.start.assign(size_t(rows) + 1, 0);
  const T noScale = T(1);
  for (const HardSlice& s : slices)
    forEachSliceEntry(s, noScale, [&](Eigen::Index i, Eigen::Index j, T) { ++out.start[size_t(transposed ? j : i) + 1]; });
  for (size_t r = 0; r < size_t(rows); ++r) out.start[r + 1] += out.start[r];
  out.entries.resize(total);
  std::vector<Eigen::Index> next(out.start.begin(), out.start.end() - 1);
  for (size_t l = 0; l < slices.size(); ++l)
    forEachSliceEntry(slices[l], share(l), [&](Eigen::Index i, Eigen::Index j, T a) {
      out.entries[size_t(next[size_t(transposed ? j : i)]++)] = {int(transposed ? i : j), a};
    });
  return out;
}

// The rows × M.cols() product of these rows with M (A·M, or Aᵀ·M when they were built transposed), rows split
// across threads.
template <class T>
Mat<T> sliceRowsProduct(const SliceRows<T>& a, const Mat<T>& M) {
  Mat<T> out(a.rows(), M.cols());
  const double work = double(a.entries.size()) * double(M.cols());
  parallelFor(a.rows(), work, [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index r = first; r < end; ++r) {
      auto row = out.row(r);
      row.setZero();
      for (Eigen::Index e = a.start[size_t(r)]; e < a.start[size_t(r) + 1]; ++e)
        row += a.entries[size_t(e)].value * M.row(a.entries[size_t(e)].index);
    }
  });
  return out;
}

// Rows [first, first + count) of the dense matrix (the plan when built by row), rows split across threads:
// each row zeroed and its entries added while it is in cache.
template <class T>
void sliceRowsDense(const SliceRows<T>& a, Eigen::Index first, Mat<T>& block) {
  parallelFor(block.rows(), double(block.rows()) * double(a.cols), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index r = begin; r < end; ++r) {
      T* row = block.row(r).data();
      std::fill(row, row + a.cols, T(0));
      for (Eigen::Index e = a.start[size_t(first + r)]; e < a.start[size_t(first + r) + 1]; ++e)
        row[a.entries[size_t(e)].index] += a.entries[size_t(e)].value;
    }
  });
}

}  // namespace tl
