#include "ops/log_domain.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/large_buffers.h"
#include "common/parallel.h"
#include "common/prefetch.h"
#include "ops/score_blocks.h"

namespace tl {
namespace {

// A pass over X reads one row from memory, then works on it in cache (its maximum, exponentials and sums). The
// hardware prefetcher runs only a little ahead of the reads, so the memory sat idle while a row was worked on and
// the work then waited for the next row. So each chunk of a row's exponentials first asks for the same columns of
// the next row, which arrive while the exponentials are computed: a quarter less time for Sinkhorn at n = 4096
// (README, Performance). `nextRow` null: the last row, nothing to ask for. `written` is the row the chunks
// write: their boundaries fall on its 64-byte boundaries, where Eigen's packets start (AVX-512 or AVX2), so
// each chunk is vectorised as the whole row would be (scalar exponentials only at the row's unaligned start and
// at its end) and every result has the bits of the unchunked expression.
template <class T, class Chunk>
void overChunksPrefetchingNextRow(const T* written, Eigen::Index columns, const T* nextRow, Chunk&& chunk) {
  constexpr Eigen::Index kChunk = 256, kBoundary = 64 / sizeof(T);  // columns per chunk; between boundaries
  const Eigen::Index pastBoundary = Eigen::Index(reinterpret_cast<std::uintptr_t>(written) / sizeof(T) % kBoundary);
  for (Eigen::Index first = 0, end; first < columns; first = end) {
    end = std::min(columns, first == 0 ? kChunk - pastBoundary : first + kChunk);
    if (nextRow) prefetchSegment(nextRow + first, end - first);
    chunk(first, end - first);
  }
}

template <class T>
const T* nextRowOf(const Mat<T>& X, Eigen::Index i) {
  return i + 1 < X.rows() ? X.row(i + 1).data() : nullptr;
}

// row ← exp(X_i + colShift − m), m the shift of the row's log-sum-exp (returned): row i of X in a buffer that
// stays in L1 for both passes (its maximum, then its exponentials), the next row asked for meanwhile. The row
// pass that rowLogSumExp and rowClosurePass share.
template <class T>
T exponentiateShiftedRow(const Mat<T>& X, Eigen::Index i, const Vec<T>& colShift,
                         Eigen::Array<T, 1, Eigen::Dynamic>& row) {
  row = X.row(i).array() + colShift.transpose().array();
  const T m = logSumExpShift(row.maxCoeff());
  overChunksPrefetchingNextRow(row.data(), X.cols(), nextRowOf(X, i), [&](Eigen::Index col, Eigen::Index len) {
    row.segment(col, len) = exactExp(row.segment(col, len) - m);
  });
  return m;
}

}  // namespace

// X is read from memory once per half-step (exponentiateShiftedRow). Rows are split across threads.
template <class T>
Vec<T> rowLogSumExp(const Mat<T>& X, const Vec<T>& colShift) {
  Vec<T> out(X.rows());
  parallelFor(X.rows(), double(X.size()), [&](Eigen::Index first, Eigen::Index end) {
    Eigen::Array<T, 1, Eigen::Dynamic> row(X.cols());
    for (Eigen::Index i = first; i < end; ++i) {
      const T m = exponentiateShiftedRow(X, i, colShift, row);
      out(i) = m + std::log(row.sum());
    }
  });
  return out;
}

// X is row-major, so each thread takes a range of columns and walks every row's contiguous segment of it, in
// tiles of kTileRows rows × at most kTileCols columns small enough to stay in cache: the tile's column maxima,
// then its sum of exp(x − running max) from cache. X is read from memory once per half-step (a pass for the
// maxima and another for the sums read it twice); a new maximum rescales the running sum, one exp per column
// and tile, 1/kTileRows of the work. The sums ask for the next tile's rows as they go (see
// overChunksPrefetchingNextRow): ASAP at n = 4096, whose first closure is this pass, about 9 % faster in float32.
template <class T>
Vec<T> colLogSumExp(const Mat<T>& X, const Vec<T>& rowShift) {
  constexpr Eigen::Index kTileRows = 32, kTileCols = 512;
  using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
  const T negInf = -std::numeric_limits<T>::infinity();
  Vec<T> out(X.cols());
  parallelFor(X.cols(), double(X.size()), [&](Eigen::Index first, Eigen::Index end) {
    Row colMax(std::min(kTileCols, end - first)), shift(colMax.size()), sum(colMax.size()), tileMax(colMax.size());
    for (Eigen::Index c0 = first; c0 < end; c0 += kTileCols) {
      const Eigen::Index width = std::min(kTileCols, end - c0);
      auto runningMax = colMax.head(width), s = shift.head(width), total = sum.head(width), tile = tileMax.head(width);
      runningMax.setConstant(negInf);
      total.setZero();
      s.setZero();  // the shift of a column with no rows at all: log 0 = −inf
      for (Eigen::Index i0 = 0; i0 < X.rows(); i0 += kTileRows) {
        const Eigen::Index i1 = std::min(X.rows(), i0 + kTileRows);
        tile = runningMax;
        for (Eigen::Index i = i0; i < i1; ++i) tile = tile.max(X.row(i).segment(c0, width).array() + rowShift(i));
        // The shift is the running max, 0 while a column has seen only −inf (total is then 0 and stays 0).
        s = (tile == negInf).select(T(0), tile);
        total *= exactExp(runningMax - s);
        for (Eigen::Index i = i0; i < i1; ++i) {
          if (i + kTileRows < X.rows()) prefetchSegment(X.row(i + kTileRows).data() + c0, width);
          total += exactExp(X.row(i).segment(c0, width).array() + rowShift(i) - s);
        }
        runningMax = tile;
      }
      out.segment(c0, width) = (s + total.log()).transpose().matrix();
    }
  });
  return out;
}

template <class T>
RowClosurePass<T> rowClosurePass(const Mat<T>& X, const Vec<T>& colShift, const Vec<T>& logRowMarginal) {
  constexpr Eigen::Index kBlockRows = 64;  // rows per column partial sum: fixed, so sums never depend on threads
  const T negInf = -std::numeric_limits<T>::infinity();
  const Eigen::Index nq = X.rows(), nk = X.cols(), blocks = (nq + kBlockRows - 1) / kBlockRows;
  RowClosurePass<T> r;
  r.rowLse.resize(nq);
  Mat<T> blockColSums(blocks, nk);
  std::vector<char> blockExact(std::size_t(blocks), 1);
  parallelFor(blocks, double(X.size()), [&](Eigen::Index firstBlock, Eigen::Index endBlock) {
    Eigen::Array<T, 1, Eigen::Dynamic> row(nk);
    for (Eigen::Index b = firstBlock; b < endBlock; ++b) {
      auto sums = blockColSums.row(b).array();
      sums.setZero();
      for (Eigen::Index i = b * kBlockRows; i < std::min(nq, (b + 1) * kBlockRows); ++i) {
        const T m = exponentiateShiftedRow(X, i, colShift, row);
        r.rowLse(i) = m + std::log(row.sum());
        const T u = closedPotential(logRowMarginal(i), r.rowLse(i));
        if (u == negInf) continue;  // an inactive row carries no mass
        const T factor = std::exp(u + m);
        if (!std::isfinite(factor)) blockExact[std::size_t(b)] = 0;
        else sums += factor * row;
      }
    }
  });
  Eigen::Array<T, Eigen::Dynamic, 1> total = Eigen::Array<T, Eigen::Dynamic, 1>::Zero(nk);
  for (Eigen::Index b = 0; b < blocks; ++b) total += blockColSums.row(b).transpose().array();
  const bool exact = std::all_of(blockExact.begin(), blockExact.end(), [](char e) { return e != 0; });
  if (!exact || !columnLseFromSums(total, colShift, r.colLse))
    r.colLse = withMaskedColumns(colLogSumExp(X, closure(logRowMarginal, r.rowLse)), colShift);
  return r;
}

template <class T>
bool columnLseFromSums(const Eigen::Array<T, Eigen::Dynamic, 1>& sums, const Vec<T>& colShift, Vec<T>& colLse) {
  const T negInf = -std::numeric_limits<T>::infinity(), smallest = std::sqrt(std::numeric_limits<T>::min());
  const Eigen::Index n = sums.size();
  // Loops without early exits, which the compiler vectorises (Eigen's any() and select run a token at a time).
  int inexact = 0;
  for (Eigen::Index j = 0; j < n; ++j) inexact += int(colShift(j) != negInf) & int(sums(j) < smallest);
  if (inexact > 0) return false;
  colLse = withMaskedColumns(Vec<T>((sums.log() - colShift.array()).matrix()), colShift);  // log as packets
  return true;
}

// With an output, each thread forms its rows in blocks of about kScoreBlockBytes (one core's L2 cache,
// score_blocks.h) and multiplies each block by the values right after forming it.
template <class T>
void expPlan(const Mat<T>& X, const Vec<T>& ut, const Vec<T>& vt, T scale, Mat<T>& out,
             const PlanPassExtras<T>& extras) {
  if (out.rows() != X.rows() || out.cols() != X.cols()) out = largeMatrix<T>(X.rows(), X.cols());
  if (extras.rowSums) extras.rowSums->resize(X.rows());
  const bool withOutput = extras.values && extras.output;
  const ProductPanels<T> values = productPanels(withOutput ? *extras.values : Mat<T>());
  if (withOutput) extras.output->resize(X.rows(), extras.values->cols());
  const Eigen::Index blockRows = withOutput ? scoreBlockRows<T>(X.rows(), X.cols()) : X.rows();
  parallelFor(X.rows(), double(X.size()), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index block = first; block < end; block += blockRows) {
      const Eigen::Index blockEnd = std::min(end, block + blockRows);
      for (Eigen::Index i = block; i < blockEnd; ++i) {
        auto plan = out.row(i);
        overChunksPrefetchingNextRow(plan.data(), X.cols(), nextRowOf(X, i), [&](Eigen::Index col, Eigen::Index len) {
          plan.segment(col, len) =
              scale * exactExp((X.row(i).segment(col, len).array() + ut(i)) + vt.segment(col, len).transpose().array());
        });
        if (extras.rowSums) (*extras.rowSums)(i) = plan.sum();
      }
      if (withOutput) productRows(out, values, block, blockEnd, T(1), *extras.output);
    }
  });
}

template <class T>
Mat<T> scores(const Mat<T>& Q, const Mat<T>& K) {
  // In place: one n_q × n_k buffer, not a product temporary and a scaled copy.
  Mat<T> S = largeMatrix<T>(Q.rows(), K.rows());
  forEachScoreBlock(Q, K, S, [](Eigen::Index, Eigen::Index, Eigen::Index) {});
  return S;
}

template <class T>
void checkScaledScores(T maxAbsScore, double eps) {
  const char* type = sizeof(T) == 4 ? "float32" : "float64";
  auto text = [](double x) {
    std::ostringstream out;
    out << std::setprecision(3) << x;
    return out.str();
  };
  if (!std::isfinite(maxAbsScore))
    throw InvalidArgument(std::string("the scores QKᵀ/√d overflow ") + type +
                          ": entries of Q or K are too large; scale the queries and keys down (or use float64)");
  // The potentials grow as large as X, and a plan entry is exp(X + u + v) with u + v cancelling X: its exponent is
  // off by about |X|·(unit roundoff). Past 2^-10 that is a wrong plan whose marginals no longer hold (S/eps = 1e301
  // gave column sums of 64 right after a column normalisation), so refuse it: 8.8e12 in float64, 16384 in float32.
  const double largest = std::ldexp(1.0, -10) / (double(std::numeric_limits<T>::epsilon()) / 2);
  const double scaled = double(maxAbsScore) / eps;
  if (!(scaled <= largest))
    throw InvalidArgument(std::string("the scaled scores S/eps are too large for ") + type + " (above " + text(largest) +
                          " rounding alone spoils the plan): the largest |S|/eps is " +
                          text(scaled) + " (largest |S| = " + text(maxAbsScore) + ", eps = " + text(eps) +
                          "); raise eps to at least " + text(double(maxAbsScore) / largest) +
                          " or scale the queries and keys down" + (sizeof(T) == 4 ? " (or use float64)" : ""));
}

template <class T>
Mat<T> scaledScores(Mat<T> S, double eps) {
  // One pass: a NaN entry propagates to the maximum, and NaN or inf fails the check.
  const T maxAbs = S.size() == 0 ? T(0) : S.cwiseAbs().template maxCoeff<Eigen::PropagateNaN>();
  checkScaledScores(maxAbs, eps);
  S /= T(eps);
  return S;
}

// The product block by block, each block divided by √d and eps exactly as scores() and scaledScores(S, eps) do
// (the same roundings) while it is in cache, and max |S| found on the way.
template <class T>
Mat<T> scaledScores(const Mat<T>& Q, const Mat<T>& K, double eps) {
  Mat<T> X = largeMatrix<T>(Q.rows(), K.rows());
  if (X.size() == 0) {
    checkScaledScores(T(0), eps);
    return X;
  }
  const T e = T(eps);
  Vec<T> rowMax(X.rows());  // max_j |S_ij|, NaN when the row has a NaN
  forEachScoreBlock(Q, K, X, [&](Eigen::Index, Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index i = first; i < end; ++i) {
      auto row = X.row(i).array();
      rowMax(i) = row.abs().template maxCoeff<Eigen::PropagateNaN>();
      row /= e;
    }
  });
  checkScaledScores(rowMax.template maxCoeff<Eigen::PropagateNaN>(), eps);
  return X;
}

template <class T>
void checkScaledScoreBound(const Mat<T>& Q, const Mat<T>& K, double eps) {
  if (Q.size() == 0 || K.size() == 0) return;
  // In double, so that the bound itself cannot overflow before it is compared.
  const double bound = Q.template cast<double>().rowwise().norm().maxCoeff() *
                       K.template cast<double>().rowwise().norm().maxCoeff() / std::sqrt(double(Q.cols()));
  checkScaledScores(bound <= double(std::numeric_limits<T>::max()) ? T(bound) : std::numeric_limits<T>::infinity(), eps);
}

void checkDenseSize(long long nQueries, long long nKeys, size_t bytesPerEntry, const char* what) {
  // The CPU reference keeps a few dense n_q × n_k matrices (scores, plan); cap their footprint well below
  // the memory of a small workstation instead of letting the allocator fail mid-way.
  constexpr double kLimitBytes = 6.0 * (1ull << 30);
  const double needed = 3.0 * double(nQueries) * double(nKeys) * double(bytesPerEntry);
  if (needed > kLimitBytes) {
    throw ResourceError(std::string(what) + " with " + std::to_string(nQueries) + " queries × " + std::to_string(nKeys) +
                        " keys needs about " + std::to_string(int(needed / (1 << 30) + 0.5)) +
                        " GiB for dense n×n matrices (limit 6 GiB on the CPU reference); use fewer tokens");
  }
}

template void checkScaledScores(float, double);
template void checkScaledScores(double, double);
template Mat<float> scaledScores(Mat<float>, double);
template void checkScaledScoreBound(const Mat<float>&, const Mat<float>&, double);
template void checkScaledScoreBound(const Mat<double>&, const Mat<double>&, double);
template Mat<double> scaledScores(Mat<double>, double);
template Mat<float> scaledScores(const Mat<float>&, const Mat<float>&, double);
template Mat<double> scaledScores(const Mat<double>&, const Mat<double>&, double);
template Vec<float> rowLogSumExp(const Mat<float>&, const Vec<float>&);
template Vec<double> rowLogSumExp(const Mat<double>&, const Vec<double>&);
template Vec<float> colLogSumExp(const Mat<float>&, const Vec<float>&);
template Vec<double> colLogSumExp(const Mat<double>&, const Vec<double>&);
template RowClosurePass<float> rowClosurePass(const Mat<float>&, const Vec<float>&, const Vec<float>&);
template RowClosurePass<double> rowClosurePass(const Mat<double>&, const Vec<double>&, const Vec<double>&);
template bool columnLseFromSums(const Eigen::Array<float, Eigen::Dynamic, 1>&, const Vec<float>&, Vec<float>&);
template bool columnLseFromSums(const Eigen::Array<double, Eigen::Dynamic, 1>&, const Vec<double>&, Vec<double>&);
template void expPlan(const Mat<float>&, const Vec<float>&, const Vec<float>&, float, Mat<float>&,
                      const PlanPassExtras<float>&);
template void expPlan(const Mat<double>&, const Vec<double>&, const Vec<double>&, double, Mat<double>&,
                      const PlanPassExtras<double>&);
template Mat<float> scores(const Mat<float>&, const Mat<float>&);
template Mat<double> scores(const Mat<double>&, const Mat<double>&);

}  // namespace tl
