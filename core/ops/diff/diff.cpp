#include "ops/diff/diff.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/errors.h"
#include "common/large_buffers.h"
#include "common/row_product.h"
#include "ops/diff/diff_device.h"
#include "ops/family.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/score_blocks.h"
#include "ops/softmax/row_softmax.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

// Rows [first, end) of the second map, S2 = Q2 K2ᵀ/√h made its softmax row by row, in a buffer of their own. Row r
// sits at the offset from an aligned address that row first + r of a whole n_q × n_k matrix has, so that Eigen's
// vectorised row passes peel the same leading entries (a peeled entry's exp is std::exp, the others packetExp):
// the map has the bits it had as a matrix of its own.
template <class T>
class SecondMapRows {
 public:
  // One buffer for up to maxRows rows, reused by every form() of a block.
  SecondMapRows(Eigen::Index maxRows, Eigen::Index nk) : nk_(nk), storage_(maxRows * nk + kAlignedEntries) {}
  void form(const Mat<T>& Q2, const ProductPanels<T>& keys2, Eigen::Index first, Eigen::Index end) {
    shift_ = (first * nk_) % kAlignedEntries;
    Eigen::Map<Mat<T>> scores(storage_.data() + shift_, end - first, nk_);
    // The product writes row r of its output from row r of its queries: the chunk's queries are copied to rows
    // 0, … of a buffer that, like the scores, is reused (allocated again only for a shorter last chunk).
    queries_ = Q2.middleRows(first, end - first);
    productRows(queries_, keys2, 0, end - first, scoreScale<T>(Q2.cols()), scores);
  }
  T* row(Eigen::Index r) { return storage_.data() + shift_ + r * nk_; }

 private:
  static constexpr Eigen::Index kAlignedEntries = EIGEN_MAX_ALIGN_BYTES / Eigen::Index(sizeof(T));
  Eigen::Index nk_, shift_ = 0;
  Vec<T> storage_;  // aligned as Mat<T>'s storage is
  Mat<T> queries_;
};

// Row and column sums of one of the two maps, per block of rows as rowSoftmax sums them, and its max |score|.
template <class T>
struct MapSums {
  MapSums(Eigen::Index nq, Eigen::Index nk) : rows(nq), maxAbsScore(nq), blockCols(scoreBlockCount<T>(nq, nk), nk) {}
  void add(Eigen::Index i, const SoftmaxRow<T>& row) {
    rows(i) = row.sum;
    maxAbsScore(i) = row.maxAbsScore;
  }
  Vec<T> cols() const {
    Vec<T> sums = Vec<T>::Zero(blockCols.cols());
    for (Eigen::Index block = 0; block < blockCols.rows(); ++block) sums += blockCols.row(block).transpose();
    return sums;
  }
  // Refuses scores that overflowed (NaN or inf), as every softmax does (checkScaledScores at eps = 1).
  void checkScores() const {
    if (maxAbsScore.size() > 0 && blockCols.cols() > 0)
      checkScaledScores(maxAbsScore.template maxCoeff<Eigen::PropagateNaN>(), 1.0);
  }
  Vec<T> rows, maxAbsScore;
  Mat<T> blockCols;
};

// The second map is formed kSecondMapRows rows at a time beside the first one's block of rows (ops/score_blocks.h),
// so that both stay in the core's L2 cache: a second map as large as the block (another 0.5–2 MiB) made the pass
// slower than two whole maps at n = 1024. A multiple of the product's tile rows (6 with AVX-512, 4 otherwise).
constexpr Eigen::Index kSecondMapRows = 24;

// A = softmax(Q1K1ᵀ/√h) − lambda·softmax(Q2K2ᵀ/√h) and A·V in one pass over blocks of rows: each block's first map
// is formed in the plan, its second beside it, the difference taken and multiplied into V while both are in the
// core's cache. (Formed as two whole maps, the second one's n_q × n_k entries went to memory and back, and A·V read
// the plan once more: a fifth to a quarter of the time at n = 4096.) A's row and column sums are each map's minus
// lambda times the other's: the marginals cost no pass of their own.
template <class T>
PlanResult<T> diffOnValid(const AttentionInput<T>& in, double lambda, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows(), h = in.Q.cols() / 2;
  checkDenseSize(nq, nk, sizeof(T), "diff");
  feedback.throwIfCanceled();
  const Mat<T> Q1 = in.Q.leftCols(h), K1 = in.K.leftCols(h), Q2 = in.Q.rightCols(h);
  const ProductPanels<T> keys2 = productPanels(in.K.rightCols(h).transpose());
  const ProductPanels<T> values = productPanels(in.V ? *in.V : Mat<T>());
  PlanResult<T> r;
  Mat<T> plan = largeMatrix<T>(nq, nk);
  if (in.V) r.output = Mat<T>(nq, in.V->cols());
  MapSums<T> first(nq, nk), second(nq, nk);
  const T l = T(lambda);
  forEachScoreBlock(Q1, K1, plan, [&](Eigen::Index block, Eigen::Index begin, Eigen::Index end) {
    auto firstCols = first.blockCols.row(block), secondCols = second.blockCols.row(block);
    firstCols.setZero();
    secondCols.setZero();
    SecondMapRows<T> secondRows(kSecondMapRows, nk);
    for (Eigen::Index chunk = begin; chunk < end; chunk += kSecondMapRows) {
      const Eigen::Index chunkEnd = std::min(end, chunk + kSecondMapRows);
      secondRows.form(Q2, keys2, chunk, chunkEnd);
      for (Eigen::Index i = chunk; i < chunkEnd; ++i) {
        first.add(i, softmaxRowInPlace(plan.row(i).data(), nk));
        firstCols += plan.row(i);
        T* secondRow = secondRows.row(i - chunk);
        second.add(i, softmaxRowInPlace(secondRow, nk));
        const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> secondMap(secondRow, nk);
        secondCols += secondMap;
        plan.row(i) -= l * secondMap;
      }
    }
    if (in.V) productRows(plan, values, begin, end, T(1), *r.output);
  });
  first.checkScores();
  second.checkScores();
  r.plan = std::move(plan);
  r.rowTarget = Vec<T>::Ones(nq);
  r.colTarget = Vec<T>::Constant(nk, T(nq) / T(nk));
  r.errors = marginalErrorsFromSums<T>(first.rows - l * second.rows, r.rowTarget, first.cols() - l * second.cols(),
                                       r.colTarget);
  r.errorHistory = {r.errors};
  feedback.setProgress(1.0, "diff");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

const ParamBindings<DiffParams>& diffParamBindings() {
  static const ParamBindings<DiffParams> bindings = [] {
    ParamSpec lambda = realParam("lambda", -2, 2, 0.5,
                                 "DiffTransformer mixing weight: A = softmax(Q1K1ᵀ/√h) − lambda·softmax(Q2K2ᵀ/√h)");
    lambda.uiMin = 0;  // the slider covers the usual range; the entry box accepts [-2, 2]
    lambda.uiMax = 1;
    ParamBindings<DiffParams> b;
    b.field(lambda, &DiffParams::lambda);
    bindMaskMode(b, false);
    return b;
  }();
  return bindings;
}

DiffParams::DiffParams() { diffParamBindings().fillDefaults(*this); }
DiffParams DiffParams::from(const ParamSet& resolved) { return diffParamBindings().fill(resolved); }

void checkDiffHeadDimension(Eigen::Index d) {
  if (d % 2 != 0)
    throw InvalidArgument("diff: the head dimension d = " + std::to_string(d) +
                          " is odd; DiffTransformer splits Q and K into two halves, so d must be even");
}

template <class T>
PlanResult<T> diffAttention(const AttentionInput<T>& input, const DiffParams& params, Feedback& feedback) {
  diffParamBindings().check(params, "diff");
  validateInput(input);
  checkDiffHeadDimension(input.Q.cols());
  return runOnValidSubsequence<T>(
      input, [&](const AttentionInput<T>& valid) { return diffOnValid(valid, params.lambda, feedback); });
}

template PlanResult<float> diffAttention(const AttentionInput<float>&, const DiffParams&, Feedback&);
template PlanResult<double> diffAttention(const AttentionInput<double>&, const DiffParams&, Feedback&);

void registerDiff(OperatorRegistry& registry) {
  CudaPath<DiffParams> cuda;
  cuda.run = diffOnDevice;
  registry.add(familyInfo<DiffParams>(
      {{"diff", "DiffTransformer",
        "difference of two softmax maps from the two halves of the head dimension (Q = [Q1|Q2], K = [K1|K2], d must "
        "be even); not a transport plan: entries can be negative, rows sum to 1 − lambda"},
       diffParamBindings(),
       {},
       {},
       cuda},
      [](const auto& input, const DiffParams& p, Feedback& f) { return diffAttention(input, p, f); }));
}

}  // namespace tl
