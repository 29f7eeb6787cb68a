#include "ops/asap/sliced_potentials.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/argsort.h"
#include "common/parallel.h"

namespace tl {
namespace {

// Slope of φ on [x_(i), x_(i+1)] (0-based i): the key matched to the i-th smallest query.
double slope(const std::vector<double>& ySorted, Eigen::Index i, Eigen::Index nx) {
  const Eigen::Index ny = Eigen::Index(ySorted.size());
  if (nx == ny) return ySorted[size_t(i)];
  // 1-based ⌈(i+1)·n_y/n_x⌉ → 0-based index.
  const Eigen::Index k = (Eigen::Index(i + 1) * ny + nx - 1) / nx - 1;
  return ySorted[size_t(std::clamp<Eigen::Index>(k, 0, ny - 1))];
}

// x and y in ascending order (stable), and the orders. A loop over slices keeps one and sorts each slice into
// it, so its buffers are allocated once per thread, not once per slice.
struct SortedProblem {
  ArgsortWorkspace<double> sort;
  std::vector<Eigen::Index> orderX, orderY;
  std::vector<double> xSorted, ySorted;

  void sortBoth(const Vec<double>& x, const Vec<double>& y) {
    stableArgsort(x.data(), size_t(x.size()), orderX, sort);
    stableArgsort(y.data(), size_t(y.size()), orderY, sort);
    xSorted.resize(orderX.size());
    ySorted.resize(orderY.size());
    for (size_t r = 0; r < orderX.size(); ++r) xSorted[r] = x(orderX[r]);
    for (size_t r = 0; r < orderY.size(); ++r) ySorted[r] = y(orderY[r]);
  }
};

// fSorted ← f at the sorted x (the recursion of potential1D).
void sortedSourcePotential(const SortedProblem& s, std::vector<double>& fSorted) {
  const Eigen::Index n = Eigen::Index(s.xSorted.size());
  fSorted.resize(size_t(n));
  fSorted[0] = 0.5 * s.xSorted[0] * s.xSorted[0];
  for (Eigen::Index i = 0; i + 1 < n; ++i) {
    const double x0 = s.xSorted[size_t(i)], x1 = s.xSorted[size_t(i + 1)];
    fSorted[size_t(i + 1)] = fSorted[size_t(i)] + 0.5 * (x1 * x1 - x0 * x0) - slope(s.ySorted, i, n) * (x1 - x0);
  }
}

}  // namespace

Potential1D potential1D(const Vec<double>& x, const Vec<double>& y) {
  const Eigen::Index n = x.size();
  SortedProblem s;
  s.sortBoth(x, y);
  std::vector<double> fSorted;
  sortedSourcePotential(s, fSorted);
  Potential1D p;
  p.f.resize(n);
  for (Eigen::Index r = 0; r < n; ++r) p.f(s.orderX[size_t(r)]) = fSorted[size_t(r)];
  if (y.size() == n) {
    // g on the matched atom: the key of rank r pairs with the query of rank r (tight on the matching).
    p.g.resize(n);
    for (Eigen::Index r = 0; r < n; ++r) {
      const double gap = s.xSorted[size_t(r)] - s.ySorted[size_t(r)];
      p.g(s.orderY[size_t(r)]) = 0.5 * gap * gap - fSorted[size_t(r)];
    }
  }
  return p;
}

Vec<double> potentialExtension(const Vec<double>& x, const Vec<double>& y, const Vec<double>& z) {
  const Eigen::Index n = x.size();
  SortedProblem s;
  s.sortBoth(x, y);
  // φ at the sorted knots, φ(x_(1)) = 0.
  std::vector<double> phi(static_cast<size_t>(n), 0.0);
  for (Eigen::Index i = 0; i + 1 < n; ++i)
    phi[size_t(i + 1)] = phi[size_t(i)] + slope(s.ySorted, i, n) * (s.xSorted[size_t(i + 1)] - s.xSorted[size_t(i)]);
  // Outer rays: slope y_(1) on the left and the largest key on the right, so y_(n) ∈ ∂φ(x_(n)).
  const double leftSlope = s.ySorted.front();
  const double rightSlope = s.ySorted.back();
  Vec<double> out(z.size());
  for (Eigen::Index k = 0; k < z.size(); ++k) {
    const double zk = z(k);
    double phiZ;
    if (zk <= s.xSorted.front()) {
      phiZ = leftSlope * (zk - s.xSorted.front());
    } else if (zk >= s.xSorted.back()) {
      phiZ = phi.back() + rightSlope * (zk - s.xSorted.back());
    } else {
      const auto it = std::upper_bound(s.xSorted.begin(), s.xSorted.end(), zk);
      const size_t i = size_t(it - s.xSorted.begin()) - 1;  // x_(i) <= z < x_(i+1)
      phiZ = phi[i] + slope(s.ySorted, Eigen::Index(i), n) * (zk - s.xSorted[i]);
    }
    out(k) = 0.5 * zk * zk - phiZ;
  }
  return out;
}

Vec<double> monotoneMapAt(const Vec<double>& x, const Vec<double>& y, const Vec<double>& z) {
  const Eigen::Index n = x.size();
  SortedProblem s;
  s.sortBoth(x, y);
  Vec<double> out(z.size());
  for (Eigen::Index k = 0; k < z.size(); ++k) {
    const auto it = std::upper_bound(s.xSorted.begin(), s.xSorted.end(), z(k));
    if (it == s.xSorted.begin()) {
      out(k) = s.ySorted.front();
    } else if (it == s.xSorted.end()) {
      out(k) = s.ySorted.back();
    } else {
      out(k) = slope(s.ySorted, Eigen::Index(it - s.xSorted.begin()) - 1, n);
    }
  }
  return out;
}

MatD slicedFeatures(const MatD& Q, const MatD& K, const MatD& slices, const std::optional<Mask>& activeTokens) {
  const double scale = 1.0 / std::pow(double(Q.cols()), 0.25);  // eq. (11): projections of q/d^{1/4}
  const MatD X = (Q * slices.transpose()) * scale;                // n_q × L
  const MatD Y = (K * slices.transpose()) * scale;                // n_k × L
  MatD phi(Q.rows(), slices.rows());
  std::vector<Eigen::Index> active, padded;
  for (Eigen::Index i = 0; i < Q.rows(); ++i)
    ((!activeTokens || (*activeTokens)(i)) ? active : padded).push_back(i);
  // The slices are independent 1-D problems (two sorts each): split across threads, each writing its own columns.
  const double tokens = double(Q.rows() + K.rows()), sortWork = 8 * tokens * std::log2(tokens + 2);
  parallelFor(slices.rows(), double(slices.rows()) * sortWork, [&](Eigen::Index firstSlice, Eigen::Index endSlice) {
    // One thread's buffers, reused by each of its slices (potential1D's f without its allocations).
    const Eigen::Index nActive = Eigen::Index(active.size());
    Vec<double> x(nActive), y(activeTokens ? nActive : Y.rows()), f(nActive);
    SortedProblem s;
    std::vector<double> fSorted;
    for (Eigen::Index l = firstSlice; l < endSlice; ++l) {
      for (size_t a = 0; a < active.size(); ++a) x(Eigen::Index(a)) = X(active[a], l);
      if (activeTokens) {
        for (size_t a = 0; a < active.size(); ++a) y(Eigen::Index(a)) = Y(active[a], l);
      } else {
        y = Y.col(l);
      }
      s.sortBoth(x, y);
      sortedSourcePotential(s, fSorted);
      for (Eigen::Index r = 0; r < nActive; ++r) f(s.orderX[size_t(r)]) = fSorted[size_t(r)];
      const double mean = f.mean();
      for (size_t a = 0; a < active.size(); ++a) phi(active[a], l) = f(Eigen::Index(a)) - mean;
      if (!padded.empty()) {
        Vec<double> z(Eigen::Index(padded.size()));
        for (size_t p = 0; p < padded.size(); ++p) z(Eigen::Index(p)) = X(padded[p], l);
        const Vec<double> fz = potentialExtension(x, y, z);
        for (size_t p = 0; p < padded.size(); ++p) phi(padded[p], l) = fz(Eigen::Index(p)) - mean;
      }
    }
  });
  return phi;
}

}  // namespace tl
