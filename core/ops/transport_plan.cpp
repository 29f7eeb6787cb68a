#include "ops/transport_plan.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/errors.h"
#include "common/large_buffers.h"
#include "common/parallel.h"
#include "cuda/tile_index.h"
#include "ops/display_grid.h"

namespace tl {

std::string densePlanOverCap(Eigen::Index rows, Eigen::Index cols, size_t bytesPerEntry, const char* kind) {
  const double bytes = double(rows) * double(cols) * double(bytesPerEntry);
  if (bytes <= double(kDensePlanCapBytes)) return {};
  return std::string("the dense ") + kind + (*kind ? " " : "") + "plan of " + std::to_string(rows) + " queries × " +
         std::to_string(cols) + " keys needs " + std::to_string(int(bytes / (1 << 30) + 0.5)) + " GiB (cap " +
         std::to_string(int(kDensePlanCapBytes >> 30)) + " GiB)";
}

void checkMaterializable(Eigen::Index rows, Eigen::Index cols, size_t bytesPerEntry, const char* kind) {
  const std::string overCap = densePlanOverCap(rows, cols, bytesPerEntry, kind);
  if (!overCap.empty()) throw ResourceError(overCap + "; ask for the output A·V, the marginals or display tiles instead");
}

template <class T>
Mat<T> TransportPlan<T>::rowBlock(Eigen::Index first, Eigen::Index count) const {
  Mat<T> units = Mat<T>::Zero(rows(), count);
  for (Eigen::Index c = 0; c < count; ++c) units(first + c, c) = T(1);
  return applyTransposed(units).transpose();  // (Aᵀ e_i)ᵀ = row i of A
}

template <class T>
PooledPlan<T> displayGrid(Eigen::Index rows, Eigen::Index cols, int maxRows, int maxCols) {
  PooledPlan<T> p;
  const long long br = cuda::displayBlocks(rows, maxRows), bc = cuda::displayBlocks(cols, maxCols);
  for (long long r = 0; r <= br; ++r) p.rowStarts.push_back(cuda::blockStart(r, rows, br));
  for (long long c = 0; c <= bc; ++c) p.colStarts.push_back(cuda::blockStart(c, cols, bc));
  p.mean.resize(br, bc);
  p.max.resize(br, bc);
  return p;
}

namespace {

// The grid's block means and maxima, a block row of the plan at a time: rowsOf(first, count) gives its rows
// [first, first + count) (a dense plan's own rows, or rows formed for the purpose).
template <class T, class Rows>
void poolRowBlocks(PooledPlan<T>& p, Rows&& rowsOf) {
  for (Eigen::Index r = 0; r < p.mean.rows(); ++r) {
    const auto A = rowsOf(p.rowStarts[size_t(r)], p.rowStarts[size_t(r) + 1] - p.rowStarts[size_t(r)]);
    for (Eigen::Index c = 0; c < p.mean.cols(); ++c) {
      const auto block = A.middleCols(p.colStarts[size_t(c)], p.colStarts[size_t(c) + 1] - p.colStarts[size_t(c)]);
      p.mean(r, c) = block.mean();
      p.max(r, c) = block.maxCoeff();
    }
  }
}

}  // namespace

template <class T>
std::optional<std::vector<PlanEntry<T>>> TransportPlan<T>::storedEntries() const {
  std::vector<PlanEntry<T>> entries;
  if (!forEachStoredEntry([&](const PlanEntry<T>& e) { entries.push_back(e); })) return std::nullopt;
  return entries;
}

template <class T>
PooledPlan<T> TransportPlan<T>::pooled(int maxRows, int maxCols) const {
  PooledPlan<T> p = displayGrid<T>(rows(), cols(), maxRows, maxCols);
  const long long br = p.mean.rows(), bc = p.mean.cols();
  // Sums and maxima of a sparse plan's stored entries per block; a block with fewer stored entries than cells
  // also holds zeros.
  p.mean.setZero();
  p.max.setConstant(-std::numeric_limits<T>::infinity());
  Eigen::Matrix<long long, Eigen::Dynamic, Eigen::Dynamic> stored =
      Eigen::Matrix<long long, Eigen::Dynamic, Eigen::Dynamic>::Zero(br, bc);
  // The display block of an index, for indices visited mostly in rising order (row-major entries): the block of
  // the index before, unless the index left it. Two integer divisions per entry were most of the display tiles'
  // time for a band of 2.2 million entries.
  auto blockCursor = [](const std::vector<long long>& starts) {
    return [&starts, block = 0LL](long long i) mutable {
      if (i < starts[size_t(block)] || i >= starts[size_t(block) + 1])
        block = cuda::blockOf(i, starts.back(), static_cast<long long>(starts.size()) - 1);
      return block;
    };
  };
  auto rowBlockOf = blockCursor(p.rowStarts), colBlockOf = blockCursor(p.colStarts);
  const bool sparse = forEachStoredEntry([&](const PlanEntry<T>& e) {
    const long long r = rowBlockOf(e.row), c = colBlockOf(e.col);
    p.mean(r, c) += e.value;
    p.max(r, c) = std::max(p.max(r, c), e.value);
    ++stored(r, c);
  });
  if (sparse) {
    for (long long r = 0; r < br; ++r)
      for (long long c = 0; c < bc; ++c) {
        const long long cells = (p.rowStarts[r + 1] - p.rowStarts[r]) * (p.colStarts[c + 1] - p.colStarts[c]);
        p.mean(r, c) /= T(cells);
        if (stored(r, c) < cells) p.max(r, c) = std::max(p.max(r, c), T(0));
      }
    return p;
  }
  poolRowBlocks(p, [&](Eigen::Index first, Eigen::Index count) { return rowBlock(first, count); });
  return p;
}

template <class T>
PooledPlan<T> DensePlan<T>::pooled(int maxRows, int maxCols) const {
  PooledPlan<T> p = displayGrid<T>(rows(), cols(), maxRows, maxCols);
  poolRowBlocks(p, [&](Eigen::Index first, Eigen::Index count) { return A_.middleRows(first, count); });
  return p;
}

namespace {

// A plan computed in one precision, seen in another (the Engine widens float runs to double): products
// convert their operand and their result, the dense matrix converts once.
template <class To, class From>
class CastPlan final : public TransportPlan<To> {
 public:
  explicit CastPlan(std::shared_ptr<const TransportPlan<From>> inner) : inner_(std::move(inner)) {}
  Eigen::Index rows() const override { return inner_->rows(); }
  Eigen::Index cols() const override { return inner_->cols(); }
  Mat<To> apply(const Mat<To>& V) const override {
    return inner_->apply(V.template cast<From>()).template cast<To>();
  }
  Mat<To> applyTransposed(const Mat<To>& W) const override {
    return inner_->applyTransposed(W.template cast<From>()).template cast<To>();
  }
  Mat<To> materialize() const override { return inner_->materialize().template cast<To>(); }
  Vec<To> columnSums() const override { return inner_->columnSums().template cast<To>(); }
  Mat<To> rowBlock(Eigen::Index first, Eigen::Index count) const override {
    return inner_->rowBlock(first, count).template cast<To>();
  }
  bool forEachStoredEntry(const EntryVisitor<To>& visit) const override {
    return inner_->forEachStoredEntry([&](const PlanEntry<From>& e) { visit({e.row, e.col, To(e.value)}); });
  }
  const char* kind() const override { return inner_->kind(); }
  PooledPlan<To> pooled(int maxRows, int maxCols) const override {
    const PooledPlan<From> p = inner_->pooled(maxRows, maxCols);
    return {p.rowStarts, p.colStarts, p.mean.template cast<To>(), p.max.template cast<To>()};
  }

 private:
  std::shared_ptr<const TransportPlan<From>> inner_;
};

}  // namespace

template <class T>
Plan<T>::Plan(Mat<T> dense)
    : plan_(std::make_shared<DensePlan<T>>(std::move(dense))), cache_(std::make_shared<DenseCache>()) {}

template <class T>
Plan<T>::Plan(std::shared_ptr<const TransportPlan<T>> structured)
    : plan_(std::move(structured)), cache_(std::make_shared<DenseCache>()) {}

template <class T>
bool Plan<T>::isDense() const {
  return dynamic_cast<const DensePlan<T>*>(plan_.get()) != nullptr;
}

template <class T>
const Mat<T>& Plan<T>::dense() const {
  static const Mat<T> none;
  if (!plan_) return none;
  if (const auto* d = dynamic_cast<const DensePlan<T>*>(plan_.get())) return d->matrix();
  std::call_once(cache_->once, [&] {
    checkMaterializable(plan_->rows(), plan_->cols(), sizeof(T), plan_->kind());
    cache_->matrix = plan_->materialize();
  });
  return cache_->matrix;
}

template <class T>
Mat<T> Plan<T>::apply(const Mat<T>& V) const {
  if (!plan_) throw InvalidArgument("no plan to apply");
  if (V.rows() != cols())
    throw InvalidArgument("A·V: V has " + std::to_string(V.rows()) + " rows but the plan has " +
                          std::to_string(cols()) + " keys");
  return plan_->apply(V);
}

template <class T>
Mat<T> Plan<T>::applyTransposed(const Mat<T>& W) const {
  if (!plan_) throw InvalidArgument("no plan to apply");
  if (W.rows() != rows())
    throw InvalidArgument("Aᵀ·W: W has " + std::to_string(W.rows()) + " rows but the plan has " +
                          std::to_string(rows()) + " queries");
  return plan_->applyTransposed(W);
}

template <class T>
Vec<T> Plan<T>::rowSums() const {
  return apply(Mat<T>::Ones(cols(), 1)).col(0);
}

template <class T>
Vec<T> Plan<T>::colSums() const {
  if (!plan_) throw InvalidArgument("no plan to read");
  return plan_->columnSums();
}

template <class T>
std::optional<std::vector<PlanEntry<T>>> Plan<T>::storedEntries() const {
  if (!plan_) return std::nullopt;
  return plan_->storedEntries();
}

template <class T>
bool Plan<T>::forEachStoredEntry(const EntryVisitor<T>& visit) const {
  return plan_ && plan_->forEachStoredEntry(visit);
}

template <class T>
Mat<T> Plan<T>::rowBlock(Eigen::Index first, Eigen::Index count) const {
  if (!plan_) throw InvalidArgument("no plan to read");
  if (first < 0 || count < 0 || first + count > rows())
    throw InvalidArgument("rows " + std::to_string(first) + " to " + std::to_string(first + count) +
                          " are not rows of a plan with " + std::to_string(rows()));
  return plan_->rowBlock(first, count);
}

template <class T>
PooledPlan<T> Plan<T>::pooled(int maxRows, int maxCols) const {
  if (!plan_) return {};
  if (maxRows < 1 || maxCols < 1)
    throw InvalidArgument("display tiles need at least one row and one column; got " + std::to_string(maxRows) +
                          " × " + std::to_string(maxCols));
  return plan_->pooled(maxRows, maxCols);
}

template <class T>
template <class To>
Plan<To> Plan<T>::cast() const {
  if (!plan_) return {};
  if (const auto* d = dynamic_cast<const DensePlan<T>*>(plan_.get())) {
    // The GUI widens every float32 plan for its views: 128 MB per slider move at n = 4096, so in huge pages and
    // on all cores (the same numbers as one Eigen cast).
    const Mat<T>& from = d->matrix();
    Mat<To> to = largeMatrix<To>(from.rows(), from.cols());
    parallelFor(from.rows(), double(from.size()), [&](Eigen::Index begin, Eigen::Index end) {
      to.middleRows(begin, end - begin) = from.middleRows(begin, end - begin).template cast<To>();
    });
    return Plan<To>(std::move(to));
  }
  return Plan<To>(std::make_shared<CastPlan<To, T>>(plan_));
}

template PooledPlan<float> displayGrid(Eigen::Index, Eigen::Index, int, int);
template PooledPlan<double> displayGrid(Eigen::Index, Eigen::Index, int, int);
template class TransportPlan<float>;
template class TransportPlan<double>;
template class DensePlan<float>;
template class DensePlan<double>;
template class Plan<float>;
template class Plan<double>;
template Plan<double> Plan<float>::cast<double>() const;
template Plan<float> Plan<double>::cast<float>() const;
template Plan<double> Plan<double>::cast<double>() const;
template Plan<float> Plan<float>::cast<float>() const;

}  // namespace tl
