#pragma once
// A plan is an object, in the spirit of OTT-JAX's lazy geometries: it answers A·V, Aᵀ·W, its marginals and,
// on request, its dense matrix. Families whose plan has structure keep that structure (LOT: rank-r factors,
// ESP hard: weighted slice matchings, banded: the band and its duals; on the GPU: the duals beside Q and K), so
// views, exports and the CLI ask for what they need and the n_q × n_k matrix is formed only when asked,
// and never beyond a memory cap.
// Attention scale throughout: A = n_q·P, rows = queries (docs/conventions.md#scales).
#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/matrix.h"
#include "common/row_product.h"

namespace tl {

// Dense plans beyond this many bytes are refused with a ResourceError that says what to ask for instead.
constexpr size_t kDensePlanCapBytes = size_t(2) << 30;

// A plan downsampled for display: block (r, c) covers rows [rowStarts[r], rowStarts[r+1]) and columns
// [colStarts[c], colStarts[c+1]) (blocks differ in size by at most one, cuda/tile_index.h), with the mean and
// the max of the plan over the block. Heatmaps of large plans draw this instead of n_q × n_k entries.
template <class T>
struct PooledPlan {
  std::vector<long long> rowStarts, colStarts;  // rows + 1, cols + 1 entries
  Mat<T> mean, max;
};

// One stored entry of a sparse plan: A(row, col) = value.
template <class T>
struct PlanEntry {
  Eigen::Index row, col;
  T value;
};

template <class T>
using EntryVisitor = std::function<void(const PlanEntry<T>&)>;

template <class T>
class TransportPlan {
 public:
  virtual ~TransportPlan() = default;
  virtual Eigen::Index rows() const = 0;  // n_q
  virtual Eigen::Index cols() const = 0;  // n_k
  // A·V (n_q × d_v) for V (n_k × d_v).
  virtual Mat<T> apply(const Mat<T>& V) const = 0;
  // Aᵀ·W (n_k × c) for W (n_q × c).
  virtual Mat<T> applyTransposed(const Mat<T>& W) const = 0;
  // The dense n_q × n_k matrix.
  virtual Mat<T> materialize() const = 0;
  // Σ_i A_ij for every key j, Aᵀ applied to ones; plans that index their entries by column only on demand
  // (hard ESP's) sum them without the index.
  virtual Vec<T> columnSums() const { return applyTransposed(Mat<T>::Ones(rows(), 1)).col(0); }
  // "dense", "low-rank", "sliced", "band", "gpu duals", ... for labels and metrics.
  virtual const char* kind() const = 0;
  // Rows [first, first + count) of A, without forming the others. The default applies Aᵀ to unit vectors;
  // plans with cheap rows (dense, low-rank, band) form them directly.
  virtual Mat<T> rowBlock(Eigen::Index first, Eigen::Index count) const;
  // Sparse plans (the band, slice matchings) hold O(n·W) or O(L·n) entries: visit(entry) on each of them, each
  // (row, col) once and in row-major order, every other entry 0, and true; false, visiting nothing, for plans
  // that are not sparse. Readers that only pass over the entries (the heatmap's display tiles, the 3-D view's
  // largest lines) visit them rather than ask for a list: with n = 65536 and W = 16 the band's list is 2.2
  // million entries, and forming and widening it on every slider move took most of the window's time.
  virtual bool forEachStoredEntry(const EntryVisitor<T>& /*visit*/) const { return false; }
  // The same entries as a list; empty optional for plans that are not sparse.
  std::optional<std::vector<PlanEntry<T>>> storedEntries() const;
  // Block mean and max on at most maxRows × maxCols blocks. The default pools a sparse plan's stored entries,
  // others row block by row block, so the n_q × n_k matrix is never held whole (no cap); plans that live on
  // the GPU pool there.
  virtual PooledPlan<T> pooled(int maxRows, int maxCols) const;
};

// Throws ResourceError when a dense rows × cols plan of T would exceed the cap, naming the size and what to use
// instead (the output, the marginals, display tiles).
void checkMaterializable(Eigen::Index rows, Eigen::Index cols, size_t bytesPerEntry, const char* kind);
// "the dense <kind> plan of R queries × C keys needs N GiB (cap 2 GiB)" when R·C entries of bytesPerEntry exceed
// kDensePlanCapBytes (kind may be empty), else an empty string: checkMaterializable's words, for callers that
// say their own way round.
std::string densePlanOverCap(Eigen::Index rows, Eigen::Index cols, size_t bytesPerEntry, const char* kind);

template <class T>
class DensePlan final : public TransportPlan<T> {
 public:
  explicit DensePlan(Mat<T> A) : A_(std::move(A)) {}
  Eigen::Index rows() const override { return A_.rows(); }
  Eigen::Index cols() const override { return A_.cols(); }
  Mat<T> apply(const Mat<T>& V) const override { return rowProduct(A_, V); }
  Mat<T> applyTransposed(const Mat<T>& W) const override { return A_.transpose() * W; }
  Mat<T> materialize() const override { return A_; }
  Mat<T> rowBlock(Eigen::Index first, Eigen::Index count) const override { return A_.middleRows(first, count); }
  PooledPlan<T> pooled(int maxRows, int maxCols) const override;  // from its own rows, not copies of them
  const char* kind() const override { return "dense"; }
  const Mat<T>& matrix() const { return A_; }

 private:
  Mat<T> A_;
};

// The plan a result holds: empty, dense, or structured. Copies share the plan; the dense matrix of a
// structured plan is formed on the first `dense()` (under the cap) and kept, so several views asking for it
// pay once. Thread-safe: results are shared between the Engine's worker and the GUI thread.
template <class T>
class Plan {
 public:
  Plan() = default;
  Plan(Mat<T> dense);  // NOLINT(google-explicit-constructor): a dense family assigns its matrix
  template <class Derived>
  Plan(const Eigen::MatrixBase<Derived>& dense) : Plan(Mat<T>(dense)) {}  // NOLINT: or an expression
  explicit Plan(std::shared_ptr<const TransportPlan<T>> structured);

  bool empty() const { return !plan_; }
  Eigen::Index rows() const { return plan_ ? plan_->rows() : 0; }
  Eigen::Index cols() const { return plan_ ? plan_->cols() : 0; }
  Eigen::Index size() const { return rows() * cols(); }
  const char* kind() const { return plan_ ? plan_->kind() : "none"; }
  bool isDense() const;

  // The dense A (ResourceError beyond kDensePlanCapBytes; an empty matrix for an empty plan).
  const Mat<T>& dense() const;
  operator const Mat<T>&() const { return dense(); }  // NOLINT: views read plans as matrices
  T operator()(Eigen::Index i, Eigen::Index j) const { return dense()(i, j); }

  Mat<T> apply(const Mat<T>& V) const;
  Mat<T> applyTransposed(const Mat<T>& W) const;
  Vec<T> rowSums() const;
  Vec<T> colSums() const;
  PooledPlan<T> pooled(int maxRows, int maxCols) const;
  // Rows [first, first + count) from the structure, and every row in blocks of `blockRows`: visit(first, rows),
  // rows an Eigen expression (a dense plan's own rows, not copied; else a block formed for the visit: take it as
  // `const auto&`). Views that scan every entry use these, so a structured plan is never formed whole.
  Mat<T> rowBlock(Eigen::Index first, Eigen::Index count) const;
  std::optional<std::vector<PlanEntry<T>>> storedEntries() const;  // TransportPlan::storedEntries
  bool forEachStoredEntry(const EntryVisitor<T>& visit) const;     // TransportPlan::forEachStoredEntry
  template <class Visit>
  void forEachRowBlock(Eigen::Index blockRows, Visit&& visit) const {
    const Mat<T>* own = isDense() ? &dense() : nullptr;  // a dense plan's own rows, visited without a copy
    for (Eigen::Index first = 0; first < rows(); first += blockRows) {
      const Eigen::Index count = std::min(blockRows, rows() - first);
      if (own) visit(first, own->middleRows(first, count));
      else visit(first, rowBlock(first, count));
    }
  }

  const TransportPlan<T>* structure() const { return plan_.get(); }
  // The same plan in another precision (the Engine widens float runs to double for the views).
  template <class To>
  Plan<To> cast() const;

 private:
  struct DenseCache {
    std::once_flag once;
    Mat<T> matrix;
  };
  std::shared_ptr<const TransportPlan<T>> plan_;
  std::shared_ptr<DenseCache> cache_;
};

}  // namespace tl
