#include "ops/banded/banded_tail.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "ops/banded/banded_forward.h"
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

// visit(i, j, X_ij) for every support entry of an active row, row by row: every pass of the backward walks
// the band this way, so each is O(n·W) and keeps nothing of size n·W.
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

// exp(a − b) on active tokens, 0 on inactive ones (where both are −inf).
template <class T>
Vec<T> ratio(const Vec<T>& a, const Vec<T>& b, const Mask& active) {
  return active.select((a - b).array().exp(), T(0)).matrix();
}

// The output sweep at plan P = exp(X + u ⊕ v): g_u = (P ⊙ Z)1, g_v = (P ⊙ Z)ᵀ1 with Z_ij = ⟨G_i, V_j⟩, and
// dV = Pᵀ G.
template <class T>
void outputSweep(const System<T>& sys, const Vec<T>& u, const Vec<T>& v, Pullback<T>& pb) {
  pb.gu = Vec<T>::Zero(sys.Q.rows());
  pb.gv = Vec<T>::Zero(sys.K.rows());
  pb.dV = Mat<T>::Zero(sys.K.rows(), sys.V.cols());
  forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) {
    const T p = std::exp(x + u(i) + v(j));
    const T pz = p * sys.G.row(i).dot(sys.V.row(j));
    pb.gu(i) += pz;
    pb.gv(j) += pz;
    pb.dV.row(j) += p * sys.G.row(i);
  });
}

// dQ = c_s·S̄K and dK = c_s·S̄ᵀQ, with S̄_ij = scoreCotangent(i, j, X_ij) computed once per support entry.
template <class T, class ScoreCotangent>
void scoreSweep(const System<T>& sys, ScoreCotangent&& sbar, Pullback<T>& pb) {
  pb.dQ = Mat<T>::Zero(sys.Q.rows(), sys.Q.cols());
  pb.dK = Mat<T>::Zero(sys.K.rows(), sys.K.cols());
  forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) {
    const T s = sys.scoreScale * sbar(i, j, x);
    pb.dQ.row(i) += s * sys.K.row(j);
    pb.dK.row(j) += s * sys.Q.row(i);
  });
}

// Prop. 1 (docs/operators/banded.md#gradients), every plan formed from its own potentials. Seeds: ubarTop,
// vbarTop on (u[last], v[last]); with `output`, S̄ also holds P^(last,last) ⊙ Z.
template <class T>
Pullback<T> pullBackDirect(const System<T>& sys, const Iterates<T>& it, int first, int last, bool output,
                           Pullback<T> pb, const Vec<T>& ubarTop, const Vec<T>& vbarTop) {
  const Eigen::Index nq = sys.Q.rows(), nk = sys.K.rows();
  // ubar[t], vbar[t] for t in (first, last], and vbar[first] = η_v.
  std::vector<Vec<T>> ubar(size_t(last + 1)), vbar(size_t(last + 1));
  vbar[size_t(last)] = vbarTop;
  for (int t = last; t > first; --t) {
    const Vec<T>& ut = it.u[size_t(t)];
    const Vec<T>& vt = it.v[size_t(t)];
    const Vec<T>& vPrev = it.v[size_t(t - 1)];
    const T mt = it.m[size_t(t)];
    Vec<T> ub = t == last ? ubarTop : Vec<T>::Zero(nq);  // eq. (4) / (6): ubar^(t) −= P^(t,t) vbar^(t)
    Vec<T> vbPrev = Vec<T>::Zero(nk);
    const Vec<T>& vb = vbar[size_t(t)];
    forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) { ub(i) -= std::exp(x + ut(i) + vt(j)) * vb(j); });
    // eq. (5): vbar^(t−1) = −P^(t,t−1)ᵀ ubar^(t), with the raw mixed plan exp(m_t)·exp(X + u[t] ⊕ v[t−1])
    forEachSupportEntry(sys, [&](Eigen::Index i, Eigen::Index j, T x) {
      vbPrev(j) -= std::exp(x + ut(i) + vPrev(j) + mt) * ub(i);
    });
    ubar[size_t(t)] = std::move(ub);
    vbar[size_t(t - 1)] = std::move(vbPrev);
  }
  pb.etaU = last == first ? ubarTop : Vec<T>::Zero(nq);  // u[first] enters only when no step follows it
  pb.etaV = vbar[size_t(first)];

  const Vec<T>& uL = it.u[size_t(last)];
  const Vec<T>& vL = it.v[size_t(last)];
  // eq. (7)
  scoreSweep(
      sys,
      [&](Eigen::Index i, Eigen::Index j, T x) {
        T s = output ? std::exp(x + uL(i) + vL(j)) * sys.G.row(i).dot(sys.V.row(j)) : T(0);
        for (int t = first + 1; t <= last; ++t) {
          const T ui = it.u[size_t(t)](i);
          s -= std::exp(x + ui + it.v[size_t(t)](j)) * vbar[size_t(t)](j) +
               std::exp(x + ui + it.v[size_t(t - 1)](j) + it.m[size_t(t)]) * ubar[size_t(t)](i);
        }
        return s;
      },
      pb);
  return pb;
}

// Prop. 2: two tail steps from the one reference plan P = P^(2,2); the other three staircase plans are P
// rescaled by α_i = e^{u1−u2}, β_j = e^{v1−v2}, δ_j = e^{v0−v2} (with the ledger factors e^{m}, 1 on a raw
// tail). Seeds come from the output sweep.
template <class T>
Pullback<T> pullBackOneReference(const System<T>& sys, const Iterates<T>& it, int first, Pullback<T> pb) {
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

  scoreSweep(
      sys,
      [&](Eigen::Index i, Eigen::Index j, T x) {
        const T z = sys.G.row(i).dot(sys.V.row(j));
        return P(i, j, x) * (z - vbar2(j) - beta21(j) * ubar2(i) - alpha(i) * bvb1(j) - aub1(i) * delta10(j));
      },
      pb);
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
  outputSweep(sys, it.u[size_t(last)], it.v[size_t(last)], pb);
  if (schedule == BandedTailSchedule::OneReference) {
    if (last - first != 2) throw InvalidArgument("banded: the one-reference schedule needs tail_steps = 2");
    return pullBackOneReference(sys, it, first, std::move(pb));
  }
  const Vec<T> gu = pb.gu, gv = pb.gv;
  return pullBackDirect(sys, it, first, last, true, std::move(pb), gu, gv);
}

template <class T>
Pullback<T> pullBackState(const System<T>& sys, const Iterates<T>& it, int last, const Vec<T>& seedU,
                          const Vec<T>& seedV) {
  Pullback<T> pb;
  pb.dV = Mat<T>::Zero(sys.K.rows(), sys.V.cols());
  return pullBackDirect(sys, it, 0, last, false, std::move(pb), seedU, seedV);
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
