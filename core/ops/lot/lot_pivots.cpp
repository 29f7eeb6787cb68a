#include "ops/lot/lot_pivots.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "common/errors.h"
#include "data/random.h"
#include "io/npy_cache.h"

namespace tl {
namespace {

std::string shape(Eigen::Index rows, Eigen::Index cols) { return std::to_string(rows) + "×" + std::to_string(cols); }

// Squared distances D_ic = ‖x_i − c_c‖², as ‖x‖² + ‖c‖² − 2 x·c (one matrix product), clamped at 0.
MatD squaredDistances(const MatD& points, const MatD& centres) {
  MatD D = -2.0 * points * centres.transpose();
  D.colwise() += points.rowwise().squaredNorm();
  D.rowwise() += centres.rowwise().squaredNorm().transpose();
  return D.cwiseMax(0.0);
}

// k-means++ (Arthur & Vassilvitskii 2007): the first centre uniformly, each next one with probability
// proportional to the squared distance to the nearest centre chosen so far.
MatD kmeansPlusPlus(const MatD& points, int r, SeededRandom& rng) {
  const Eigen::Index m = points.rows();
  MatD centres(r, points.cols());
  auto pickUniform = [&] { return std::min<Eigen::Index>(Eigen::Index(rng.uniform() * double(m)), m - 1); };
  centres.row(0) = points.row(pickUniform());
  VecD nearest = squaredDistances(points, centres.topRows(1));
  for (int c = 1; c < r; ++c) {
    const double total = nearest.sum();
    Eigen::Index pick = m - 1;
    if (total > 0) {
      const double target = rng.uniform() * total;
      double cumulative = 0;
      for (Eigen::Index i = 0; i < m; ++i) {
        cumulative += nearest(i);
        if (cumulative > target) {
          pick = i;
          break;
        }
      }
    } else {
      pick = pickUniform();  // every point coincides with a chosen centre
    }
    centres.row(c) = points.row(pick);
    nearest = nearest.cwiseMin(squaredDistances(points, centres.row(c)).col(0));
  }
  return centres;
}

// Index of the nearest centre of every point; ties go to the lower index.
std::vector<int> assign(const MatD& points, const MatD& centres) {
  const MatD D = squaredDistances(points, centres);
  std::vector<int> label(size_t(points.rows()));
  for (Eigen::Index i = 0; i < D.rows(); ++i) {
    Eigen::Index best;
    D.row(i).minCoeff(&best);
    label[size_t(i)] = int(best);
  }
  return label;
}

void requireFinite(const MatD& m, const std::string& what) {
  if (!allEntriesFinite(m)) throw InvalidArgument("lot: " + what + " contains NaN or Inf; give finite values");
}

}  // namespace

PivotInit parsePivotInit(const std::string& text) {
  if (text == "auto") return PivotInit::Auto;
  if (text == "file") return PivotInit::File;
  if (text == "gaussian") return PivotInit::Gaussian;
  if (text == "kmeans") return PivotInit::KMeans;
  throw InvalidArgument("lot: pivot_init = '" + text + "' is not valid; expected auto, file, gaussian or kmeans");
}

const char* pivotInitName(PivotInit init) {
  switch (init) {
    case PivotInit::Auto: return "auto";
    case PivotInit::File: return "file";
    case PivotInit::Gaussian: return "gaussian";
    case PivotInit::KMeans: return "kmeans";
  }
  return "?";
}

LotPivots gaussianPivots(int r, int d, uint64_t seed) {
  SeededRandom rng(seed);
  LotPivots p;
  p.locations.resize(r, d);
  const double sd = 1.0 / std::sqrt(double(d));
  for (int l = 0; l < r; ++l)
    for (int k = 0; k < d; ++k) p.locations(l, k) = sd * rng.normal();
  p.massLogits.resize(r);
  for (int l = 0; l < r; ++l) p.massLogits(l) = 0.5 * rng.normal();
  return p;
}

namespace {

// The last k-means result and what it came from. The GUI reruns LOT on every slider move (T, eps, mass_temp)
// on the same tokens, r and seed, and k-means was most of such a run at n = 4096; the centres depend on
// nothing else, so the same points (byte for byte), r and seed get the kept centres.
struct KMeansMemo {
  std::mutex mutex;
  MatD points, centres;
  int r = 0;
  uint64_t seed = 0;

  bool holds(const MatD& p, int r_, uint64_t seed_) const {
    return r == r_ && seed == seed_ && points.rows() == p.rows() && points.cols() == p.cols() &&
           std::memcmp(points.data(), p.data(), sizeof(double) * size_t(p.size())) == 0;
  }
};

KMeansMemo& kmeansMemo() {
  static KMeansMemo memo;
  return memo;
}

MatD lloydCentres(const MatD& points, int r, uint64_t seed, Feedback& feedback) {
  SeededRandom rng(seed);
  MatD centres = kmeansPlusPlus(points, r, rng);
  std::vector<int> label = assign(points, centres);
  for (int iteration = 0; iteration < kMaxLloydIterations; ++iteration) {
    feedback.throwIfCanceled();
    MatD sums = MatD::Zero(r, points.cols());
    VecD counts = VecD::Zero(r);
    for (Eigen::Index i = 0; i < points.rows(); ++i) {
      sums.row(label[size_t(i)]) += points.row(i);
      counts(label[size_t(i)]) += 1;
    }
    for (int c = 0; c < r; ++c)
      if (counts(c) > 0) centres.row(c) = sums.row(c) / counts(c);
    std::vector<int> next = assign(points, centres);
    if (next == label) break;
    label = std::move(next);
  }
  return centres;
}

}  // namespace

MatD kmeansCentres(const MatD& points, int r, uint64_t seed, Feedback& feedback) {
  if (r < 1 || r > points.rows())
    throw InvalidArgument("lot: k-means needs 1 <= r <= number of points; r = " + std::to_string(r) + ", points = " +
                          std::to_string(points.rows()));
  KMeansMemo& memo = kmeansMemo();
  {
    const std::lock_guard<std::mutex> lock(memo.mutex);
    if (memo.holds(points, r, seed)) return memo.centres;
  }
  MatD centres = lloydCentres(points, r, seed, feedback);
  const std::lock_guard<std::mutex> lock(memo.mutex);
  memo.points = points;
  memo.centres = centres;
  memo.r = r;
  memo.seed = seed;
  return centres;
}

MatD readPivotLocations(const std::string& path, int r) {
  MatD Z = readNpyMatrixCached(path);
  if (Z.rows() != r)
    throw InvalidArgument("lot: pivots file '" + path + "' holds " + std::to_string(Z.rows()) + " pivots (shape " +
                          shape(Z.rows(), Z.cols()) + ") but r = " + std::to_string(r) + "; set r=" +
                          std::to_string(Z.rows()) + " or give an r×d array");
  requireFinite(Z, "pivots file '" + path + "'");
  return Z;
}

VecD readMassLogits(const std::string& path, int r) {
  const MatD theta = readNpyMatrixCached(path);
  if (theta.size() != r || (theta.rows() != 1 && theta.cols() != 1))
    throw InvalidArgument("lot: mass_logits file '" + path + "' has shape " + shape(theta.rows(), theta.cols()) +
                          "; expected one logit per pivot, a vector of length r = " + std::to_string(r));
  requireFinite(theta, "mass_logits file '" + path + "'");
  return Eigen::Map<const VecD>(theta.data(), r);
}

void validatePivots(const LotPivots& pivots, int r, int d) {
  const MatD& Z = pivots.locations;
  if (Z.rows() != r || Z.cols() != d)
    throw InvalidArgument("lot: pivots are " + shape(Z.rows(), Z.cols()) + " but expected r×d = " + shape(r, d) +
                          " (r pivots of the head dimension d of Q and K)");
  if (pivots.massLogits.size() != r)
    throw InvalidArgument("lot: mass_logits has length " + std::to_string(pivots.massLogits.size()) +
                          " but expected r = " + std::to_string(r) + " (one logit per pivot)");
  requireFinite(Z, "pivots");
  requireFinite(pivots.massLogits, "mass_logits");
}

template <class T>
Vec<T> logPivotMasses(const VecD& massLogits, double massTemp) {
  const VecD scaled = massLogits / massTemp;
  const double m = scaled.maxCoeff();
  const double logZ = m + std::log((scaled.array() - m).exp().sum());
  const Vec<T> logw = (scaled.array() - logZ).template cast<T>();
  for (Eigen::Index l = 0; l < logw.size(); ++l)
    if (!(std::exp(logw(l)) > T(0)))
      throw InvalidArgument("lot: pivot " + std::to_string(l) + " gets mass 0 (log w = " + std::to_string(double(logw(l))) +
                            " underflows); narrow the range of mass_logits or raise mass_temp");
  return logw;
}

template Vec<float> logPivotMasses(const VecD&, double);
template Vec<double> logPivotMasses(const VecD&, double);

}  // namespace tl
