#pragma once
// Hard ESP's plan as an object (ops/transport_plan.h): A = n_q·Σ_l w_l U_l with each slice plan U_l kept as
// its tie-group blocks (ops/esp/esp_slice.h), O(L·n) numbers, and its entries listed by row, and by column once
// Aᵀ·W is asked for (ops/esp/slice_rows.h). A·V and Aᵀ·W gather rows in O(L·n·d); the dense matrix is formed
// only when a view asks (docs/operators/esp.md#lazy-path).
#include <algorithm>
#include <mutex>
#include <optional>
#include <vector>

#include "common/large_buffers.h"
#include "common/parallel.h"
#include "ops/esp/esp_slice.h"
#include "ops/esp/slice_rows.h"
#include "ops/transport_plan.h"

namespace tl {

// Σ_l n_q·w_l·U_l·M (or U_lᵀ·M with `transposed`) by gathers, slice by slice in order, into an outRows-row
// result: A·V (and Aᵀ·W) of a sliced plan with tie groups, on one thread.
template <class T>
Mat<T> slicedBlockProduct(const std::vector<HardSlice>& slices, const Vec<T>& weights, Eigen::Index nq,
                          const Mat<T>& M, Eigen::Index outRows, bool transposed) {
  Mat<T> out = Mat<T>::Zero(outRows, M.cols());
  for (size_t l = 0; l < slices.size(); ++l)
    addSliceProduct(slices[l], T(nq) * weights(Eigen::Index(l)), M, out, transposed);
  return out;
}

// The same product for callers that need only the output (espLazyOutput): by rows (slice_rows.h) unless the
// slices tie too much for that.
template <class T>
Mat<T> slicedProduct(const std::vector<HardSlice>& slices, const Vec<T>& weights, Eigen::Index nq, const Mat<T>& M,
                     Eigen::Index outRows, bool transposed) {
  const Eigen::Index nk = transposed ? outRows : M.rows();
  if (const auto indexed = sliceRows(slices, weights, nq, nk, transposed)) return sliceRowsProduct(*indexed, M);
  return slicedBlockProduct(slices, weights, nq, M, outRows, transposed);
}

template <class T>
class SlicedPlan final : public TransportPlan<T> {
 public:
  // The entries are indexed by row here (unless the slices tie too much): every product and dense row reads
  // them (slice_rows.h). The index by column, for Aᵀ·W only, is formed on the first such product.
  SlicedPlan(std::vector<HardSlice> slices, Vec<T> weights, Eigen::Index rows, Eigen::Index cols)
      : slices_(std::move(slices)), weights_(std::move(weights)), rows_(rows), cols_(cols),
        byRow_(sliceRows(slices_, weights_, rows_, cols_, false)) {}
  Eigen::Index rows() const override { return rows_; }
  Eigen::Index cols() const override { return cols_; }
  Mat<T> apply(const Mat<T>& V) const override { return product(V, rows_, false); }
  Mat<T> applyTransposed(const Mat<T>& W) const override { return product(W, cols_, true); }
  Mat<T> materialize() const override { return rowBlock(0, rows_); }
  // Each slice's column sums side by side (the slices on all cores), then added across the slices in slice
  // order, columns on all cores: wherever a slice puts one entry in a column (every slice without ties), the
  // bits of the index by column's product with ones. An untied slice whose entries are one value, one in each
  // column, has that value as every sum.
  Vec<T> columnSums() const override {
    const auto L = Eigen::Index(slices_.size());
    const UntiedSlicesShape untied = untiedSlicesShape(slices_, cols_, /*transposed=*/true);
    const bool untiedConstant = untied.onePerRow && untied.oneMass;
    Mat<T> bySlice(L, cols_);
    parallelFor(L, double(L) * double(cols_), [&](Eigen::Index first, Eigen::Index end) {
      for (Eigen::Index l = first; l < end; ++l) {
        auto sums = bySlice.row(l);
        if (untiedConstant && withoutTieGroups(slices_[size_t(l)])) {
          sums.setConstant(onePairEntry(slices_[size_t(l)], share(size_t(l))));
          continue;
        }
        sums.setZero();
        forEachSliceEntry(slices_[size_t(l)], share(size_t(l)),
                          [&](Eigen::Index, Eigen::Index j, T a) { sums(j) += a; });
      }
    });
    Vec<T> sums(cols_);
    parallelFor(cols_, double(L) * double(cols_), [&](Eigen::Index first, Eigen::Index end) {
      auto part = sums.segment(first, end - first);
      part.setZero();
      for (Eigen::Index l = 0; l < L; ++l) part += bySlice.row(l).segment(first, end - first).transpose();
    });
    return sums;
  }
  bool forEachStoredEntry(const EntryVisitor<T>& visit) const override {
    std::vector<PlanEntry<T>> all;
    for (size_t l = 0; l < slices_.size(); ++l) addSliceEntries(slices_[l], share(l), all);
    // Slices can match the same pair: one entry per pair, row-major, their shares summed.
    std::sort(all.begin(), all.end(), [](const PlanEntry<T>& a, const PlanEntry<T>& b) {
      return a.row < b.row || (a.row == b.row && a.col < b.col);
    });
    for (size_t i = 0; i < all.size();) {
      PlanEntry<T> e = all[i];
      for (++i; i < all.size() && all[i].row == e.row && all[i].col == e.col; ++i) e.value += all[i].value;
      visit(e);
    }
    return true;
  }
  Mat<T> rowBlock(Eigen::Index first, Eigen::Index count) const override {
    // Each thread zeroes its own rows (the n×n buffer's first touch: its page faults are shared) and adds their
    // entries: from the row index, or, for slices that tie too much, by walking every slice's entries and
    // keeping those in its rows, slice by slice in order as one thread would.
    Mat<T> A = largeMatrix<T>(count, cols_);
    if (byRow_) {
      sliceRowsDense(*byRow_, first, A);
      return A;
    }
    parallelFor(count, double(count) * double(cols_), [&](Eigen::Index begin, Eigen::Index end) {
      auto rows = A.middleRows(begin, end - begin);
      rows.setZero();
      for (size_t l = 0; l < slices_.size(); ++l) addSlicePlan<T>(slices_[l], share(l), rows, first + begin);
    });
    return A;
  }
  const char* kind() const override { return "sliced"; }

 private:
  T share(size_t l) const { return T(rows_) * weights_(Eigen::Index(l)); }  // n_q·w_l
  Mat<T> product(const Mat<T>& M, Eigen::Index outRows, bool transposed) const {
    if (transposed) std::call_once(byColumnFormed_, [&] { byColumn_ = sliceRows(slices_, weights_, rows_, cols_, true); });
    const std::optional<SliceRows<T>>& indexed = transposed ? byColumn_ : byRow_;
    if (indexed) return sliceRowsProduct(*indexed, M);
    return slicedBlockProduct(slices_, weights_, rows_, M, outRows, transposed);
  }

  std::vector<HardSlice> slices_;
  Vec<T> weights_;
  Eigen::Index rows_, cols_;
  std::optional<SliceRows<T>> byRow_;  // empty when the slices tie too much
  mutable std::once_flag byColumnFormed_;
  mutable std::optional<SliceRows<T>> byColumn_;  // as byRow_, formed by the first Aᵀ·W
};

}  // namespace tl
