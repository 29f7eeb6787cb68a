#include "ops/banded/banded_tail.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "ops/banded/banded_forward.h"
#include "ops/log_domain.h"
#include "ops/subsequence.h"

namespace tl::banded {

namespace {

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <class T>
Mat<T> withZeroRow(const Mat<T>& M) {
  Mat<T> out = Mat<T>::Zero(M.rows() + 1, M.cols());
  out.topRows(M.rows()) = M;
  return out;
}

// visit(i, j, X_ij) for every support entry of an active row, row by row (the one-reference tail's sweeps).
template <class T, class Visit>
void forEachSupportEntry(const System<T>& sys, Visit&& visit) {
  const BandScores<T>& X = *sys.X;
  const Mat<T>& band = X.band();
  const Eigen::Index W = X.halfWidth();
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    if (!sys.rows(i)) continue;
    for (Eigen::Index b = X.firstSlot(i); b <= X.lastSlot(i); ++b) visit(i, i - W + b, band(i, b));
  }
}

// visit(i, b0, j0, width) for every active row: its support is the band slots [b0, b0 + width) = the columns
// [j0, j0 + width). Every pass of the backward walks the band this way, a row segment at a time, so the exps
// run as packets and the products with Q, K, V as small matrix products: O(n·W) each, nothing larger than the
// band kept.
template <class T, class Visit>
void forEachSupportRow(const System<T>& sys, Visit&& visit) {
  const BandScores<T>& X = *sys.X;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const Eigen::Index b0 = X.firstSlot(i), width = X.lastSlot(i) - b0 + 1;
    if (sys.rows(i) && width > 0) visit(i, b0, i - X.halfWidth() + b0, width);
  }
}

// exp(X_ij + a + c_j + shift) on row i's support segment, summed in that order (−inf gives exactly 0).
template <class T>
auto supportExp(const System<T>& sys, Eigen::Index i, Eigen::Index b0, Eigen::Index j0, Eigen::Index width, T a,
                const Vec<T>& c, T shift = T(0)) {
  return exactExp(sys.X->band().row(i).segment(b0, width).array() + a + c.segment(j0, width).transpose().array() +
                  shift);
}

// exp(a − b) on active tokens, 0 on inactive ones (where both are −inf).
template <class T>
Vec<T> ratio(const Vec<T>& a, const Vec<T>& b, const Mask& active) {
  return active.select((a - b).array().exp(), T(0)).matrix();
}

template <class T>
using RowArray = Eigen::Array<T, 1, Eigen::Dynamic>;

// The output sweep at plan P = exp(X + u ⊕ v): g_u = (P ⊙ Z)1, g_v = (P ⊙ Z)ᵀ1 with Z_ij = ⟨G_i, V_j⟩, and
// dV = Pᵀ G. Returns P ⊙ Z in band layout: the output term of S̄ (eq. (7)), which every pullback starts from.
template <class T>
Mat<T> outputSweep(const System<T>& sys, const Vec<T>& u, const Vec<T>& v, Pullback<T>& pb) {
  pb.gu = Vec<T>::Zero(sys.Q.rows());
  pb.gv = Vec<T>::Zero(sys.K.rows());
  pb.dV = Mat<T>::Zero(sys.K.rows(), sys.V.cols());
  Mat<T> pz = Mat<T>::Zero(sys.X->band().rows(), sys.X->band().cols());
  RowArray<T> p(pz.cols());
  forEachSupportRow(sys, [&](Eigen::Index i, Eigen::Index b0, Eigen::Index j0, Eigen::Index width) {
    p.head(width) = supportExp(sys, i, b0, j0, width, u(i), v);
    auto row = pz.row(i).segment(b0, width);
    row.noalias() = sys.G.row(i) * sys.V.middleRows(j0, width).transpose();  // Z_ij
    row.array() *= p.head(width);
    pb.gu(i) += row.sum();
    pb.gv.segment(j0, width) += row.transpose();
    pb.dV.middleRows(j0, width).noalias() += p.head(width).matrix().transpose() * sys.G.row(i);
  });
  return pz;
}

// dQ = c_s·S̄K and dK = c_s·S̄ᵀQ, with S̄ in band layout.
template <class T>
void scoreSweep(const System<T>& sys, const Mat<T>& sbar, Pullback<T>& pb) {
  pb.dQ = Mat<T>::Zero(sys.Q.rows(), sys.Q.cols());
  pb.dK = Mat<T>::Zero(sys.K.rows(), sys.K.cols());
  Eigen::Matrix<T, 1, Eigen::Dynamic> s(sbar.cols());
  forEachSupportRow(sys, [&](Eigen::Index i, Eigen::Index b0, Eigen::Index j0, Eigen::Index width) {
    s.head(width) = sys.scoreScale * sbar.row(i).segment(b0, width);
    pb.dQ.row(i).noalias() += s.head(width) * sys.K.middleRows(j0, width);
    pb.dK.middleRows(j0, width).noalias() += s.head(width).transpose() * sys.Q.row(i);
  });
}

// Prop. 1 (docs/operators/banded.md#gradients), every plan formed from its own potentials. Seeds: ubarTop,
// vbarTop on (u[last], v[last]); sbar holds the output term of S̄ (P^(last,last) ⊙ Z, or 0 for a state
// pullback), to which the step terms are added while the recursion forms each plan, so no plan is formed twice.
template <class T>
Pullback<T> pullBackDirect(const System<T>& sys, const Iterates<T>& it, int first, int last, Mat<T> sbar,
                           Pullback<T> pb, const Vec<T>& ubarTop, const Vec<T>& vbarTop) {
  const Eigen::Index nq = sys.Q.rows(), nk = sys.K.rows();
  RowArray<T> p(sbar.cols());
  Vec<T> vb = vbarTop;  // vbar^(t), ending as vbar^(first) = η_v
  for (int t = last; t > first; --t) {
    const Vec<T>& ut = it.u[size_t(t)];
    const Vec<T>& vt = it.v[size_t(t)];
    const Vec<T>& vPrev = it.v[size_t(t - 1)];
    const T mt = it.m[size_t(t)];
    Vec<T> ub = t == last ? ubarTop : Vec<T>::Zero(nq);  // eq. (4) / (6): ubar^(t) −= P^(t,t) vbar^(t)
    forEachSupportRow(sys, [&](Eigen::Index i, Eigen::Index b0, Eigen::Index j0, Eigen::Index width) {
      p.head(width) = supportExp(sys, i, b0, j0, width, ut(i), vt) * vb.segment(j0, width).transpose().array();
      ub(i) -= p.head(width).sum();
      sbar.row(i).segment(b0, width).array() -= p.head(width);
    });
    // eq. (5): vbar^(t−1) = −P^(t,t−1)ᵀ ubar^(t), with the raw mixed plan exp(m_t)·exp(X + u[t] ⊕ v[t−1])
    Vec<T> vbPrev = Vec<T>::Zero(nk);
    forEachSupportRow(sys, [&](Eigen::Index i, Eigen::Index b0, Eigen::Index j0, Eigen::Index width) {
      p.head(width) = ub(i) * supportExp(sys, i, b0, j0, width, ut(i), vPrev, mt);
      vbPrev.segment(j0, width) -= p.head(width).matrix().transpose();
      sbar.row(i).segment(b0, width).array() -= p.head(width);
    });
    vb = std::move(vbPrev);
  }
  pb.etaU = last == first ? ubarTop : Vec<T>::Zero(nq);  // u[first] enters only when no step follows it
  pb.etaV = std::move(vb);
  scoreSweep(sys, sbar, pb);  // eq. (7)
  return pb;
}

// Prop. 2: two tail steps from the one reference plan P = P^(2,2); the other three staircase plans are P
// rescaled by α_i = e^{u1−u2}, β_j = e^{v1−v2}, δ_j = e^{v0−v2} (with the ledger factors e^{m}, 1 on a raw
// tail). Seeds come from the output sweep, whose P ⊙ Z (`sbar`) is the output term of S̄.
template <class T>
Pullback<T> pullBackOneReference(const System<T>& sys, const Iterates<T>& it, int first, Mat<T> sbar,
                                 Pullback<T> pb) {
  const Eigen::Index nq = sys.Q.rows(), nk = sys.K.rows();
  const Vec<T>& v0 = it.v[size_t(first)];
  const Vec<T>& u1 = it.u[size_t(first + 1)];
  const Vec<T>& v1 = it.v[size_t(first + 1)];
  const Vec<T>& u2 = it.u[size_t(first + 2)];
  const Vec<T>& v2 = it.v[size_t(first + 2)];
  const Vec<T> alpha = ratio(u1, u2, sys.rows);
  const Vec<T> beta = ratio(v1, v2, sys.cols);
  const Vec<T> beta21 = std::exp(it.m[size_t(first + 2)]) * beta;                          // P^(2,1) = P β
  const Vec<T> delta10 = std::exp(it.m[size_t(first + 1)]) * ratio(v0, v2, sys.cols);      // P^(1,0) = P α δ
  auto P = [&](Eigen::Index i, Eigen::Index j, T x) { return std::exp(x + u2(i) + v2(j)); };

  const Vec<T>& vbar2 = pb.gv;
  Vec<T> ubar2 = pb.gu;
  forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) { ubar2(i) -= P(i, j, x) * vbar2(j); });
  Vec<T> vbar1 = Vec<T>::Zero(nk);
  forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) { vbar1(j) -= P(i, j, x) * ubar2(i); });
  vbar1 = vbar1.cwiseProduct(beta21);
  const Vec<T> bvb1 = beta.cwiseProduct(vbar1);
  Vec<T> ubar1 = Vec<T>::Zero(nq);
  forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) { ubar1(i) -= P(i, j, x) * bvb1(j); });
  ubar1 = ubar1.cwiseProduct(alpha);
  const Vec<T> aub1 = alpha.cwiseProduct(ubar1);
  Vec<T> etaV = Vec<T>::Zero(nk);
  forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) { etaV(j) -= P(i, j, x) * aub1(i); });
  pb.etaV = etaV.cwiseProduct(delta10);
  pb.etaU = Vec<T>::Zero(nq);

  const Eigen::Index W = sys.X->halfWidth();
  forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) {
    sbar(i, j - i + W) -= P(i, j, x) * (vbar2(j) + beta21(j) * ubar2(i) + alpha(i) * bvb1(j) + aub1(i) * delta10(j));
  });
  scoreSweep(sys, sbar, pb);
  return pb;
}

}  // namespace

template <class T>
System<T> makeSystem(const AttentionInput<T>& input, const BandedParams& params, const Mat<T>* G) {
  checkBandedParams(params);
  validateInput(input);
  System<T> sys;
  if (input.mask) {
    sys.valid = validIndices(*input.mask);
    sys.Q = takeRows(input.Q, sys.valid);
    sys.K = takeRows(input.K, sys.valid);
    if (input.V) sys.V = takeRows(*input.V, sys.valid);
    if (G) sys.G = takeRows(*G, sys.valid);
  } else {
    sys.Q = input.Q;
    sys.K = input.K;
    if (input.V) sys.V = *input.V;
    if (G) sys.G = *G;
  }
  sys.realQueries = sys.Q.rows();
  sys.realKeys = sys.K.rows();
  if (params.dustbin) {  // docs/operators/banded.md#dustbin: a zero token per side, reachable from everyone
    sys.Q = withZeroRow(sys.Q);
    sys.K = withZeroRow(sys.K);
    if (sys.V.size()) sys.V = withZeroRow(sys.V);
    if (sys.G.size()) sys.G = withZeroRow(sys.G);
  }
  const Eigen::Index W = systemHalfWidth(params, sys.Q.rows(), sys.K.rows());
  sys.X = std::make_shared<const BandScores<T>>(sys.Q, sys.K, T(params.eps), W);
  sys.rows = sys.X->activeRows();
  sys.cols = sys.X->activeCols();
  sys.scoreScale = T(1) / (std::sqrt(T(sys.Q.cols())) * T(params.eps));
  return sys;
}

template <class T>
Iterates<T> startIterates(const System<T>& sys) {
  Iterates<T> it;
  it.u.push_back(sys.rows.select(Vec<T>::Zero(sys.Q.rows()), kNegInf<T>).matrix());
  it.v.push_back(sys.cols.select(Vec<T>::Zero(sys.K.rows()), kNegInf<T>).matrix());
  it.m.push_back(T(0));
  return it;
}

template <class T>
void appendSteps(const System<T>& sys, Iterates<T>& it, int steps, bool centred) {
  const Eigen::Index activeRows = sys.rows.count();
  for (int s = 0; s < steps; ++s) {
    // Unit targets: u = −LSE_j(X + v), v = −LSE_i(X + u); inactive tokens stay at −inf.
    Vec<T> u = sys.rows.select(-sys.X->rowLogSumExp(it.v.back()).array(), kNegInf<T>).matrix();
    Vec<T> v = sys.cols.select(-sys.X->colLogSumExp(u).array(), kNegInf<T>).matrix();
    T m = 0;
    if (centred) {  // (u − m, v + m), m = mean of the active u (−inf stays −inf)
      m = sys.rows.select(u.array(), T(0)).sum() / T(activeRows);
      u.array() -= m;
      v.array() += m;
    }
    it.u.push_back(std::move(u));
    it.v.push_back(std::move(v));
    it.m.push_back(m);
  }
}

template <class T>
Pullback<T> pullBackOutput(const System<T>& sys, const Iterates<T>& it, int first, int last,
                           BandedTailSchedule schedule) {
  if (sys.V.size() == 0 || sys.G.size() == 0) throw InvalidArgument("banded gradients need V and G");
  Pullback<T> pb;
  Mat<T> sbar = outputSweep(sys, it.u[size_t(last)], it.v[size_t(last)], pb);
  if (schedule == BandedTailSchedule::OneReference) {
    if (last - first != 2) throw InvalidArgument("banded: the one-reference schedule needs tail_steps = 2");
    return pullBackOneReference(sys, it, first, std::move(sbar), std::move(pb));
  }
  const Vec<T> gu = pb.gu, gv = pb.gv;
  return pullBackDirect(sys, it, first, last, std::move(sbar), std::move(pb), gu, gv);
}

template <class T>
Pullback<T> pullBackState(const System<T>& sys, const Iterates<T>& it, int last, const Vec<T>& seedU,
                          const Vec<T>& seedV) {
  Pullback<T> pb;
  pb.dV = Mat<T>::Zero(sys.K.rows(), sys.V.cols());
  return pullBackDirect(sys, it, 0, last, Mat<T>(Mat<T>::Zero(sys.X->band().rows(), sys.X->band().cols())),
                        std::move(pb), seedU, seedV);
}

template <class T>
Mat<T> toOriginal(const System<T>& sys, const Mat<T>& onSystem, bool queries, Eigen::Index originalRows) {
  const Mat<T> real = onSystem.topRows(queries ? sys.realQueries : sys.realKeys);
  return sys.valid.empty() ? real : scatterRows<T>(real, sys.valid, originalRows);
}

#define TL_BANDED_TAIL(T)                                                                                      \
  template System<T> makeSystem(const AttentionInput<T>&, const BandedParams&, const Mat<T>*);                 \
  template Iterates<T> startIterates(const System<T>&);                                                        \
  template void appendSteps(const System<T>&, Iterates<T>&, int, bool);                                        \
  template Pullback<T> pullBackOutput(const System<T>&, const Iterates<T>&, int, int, BandedTailSchedule);               \
  template Pullback<T> pullBackState(const System<T>&, const Iterates<T>&, int, const Vec<T>&, const Vec<T>&); \
  template Mat<T> toOriginal(const System<T>&, const Mat<T>&, bool, Eigen::Index);
TL_BANDED_TAIL(float)
TL_BANDED_TAIL(double)
#undef TL_BANDED_TAIL

}  // namespace tl::banded
