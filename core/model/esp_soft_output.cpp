#include "model/esp_soft_output.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <Eigen/Core>

#include "common/errors.h"

namespace tl {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// One SoftSort matrix P (spec/esp.md §4.1: squared distance, ascending anchors; row r = rank r) with its
// columns in sorted order too: P[r, c] is the weight of token order[c]. Token-indexed rows are gathered
// into that order, so every product below is a dense n×n by n×m block that stays in cache.
template <class T>
struct SoftSortMatrix {
  using Array = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<int> order;  // sorted position → token
  Vector<T> sorted;        // values[order[c]], ascending
  RowMatrix<T> P;

  void build(const T* values, int n, T temp) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return values[a] < values[b]; });
    sorted.resize(n);
    for (int c = 0; c < n; ++c) sorted[c] = values[order[c]];
    // logit[r, c] = −(s_r − s_c)²/t falls off monotonically away from c = r in sorted order, and exp
    // underflows to exactly 0 in T beyond `underflow` (spec §4.1): row r is a band [lo, hi] around r, and
    // only the band goes through exp (whose underflowing inputs would take the slow denormal path).
    // The largest logit of each row is exactly 0 (the anchor is one of the entries): no max-shift needed.
    const T underflow = std::log(std::numeric_limits<T>::denorm_min());
    auto logit = [&](int r, int c) { return (sorted[c] - sorted[r]) * (sorted[c] - sorted[r]) / -temp; };
    P.setZero(n, n);
    for (int r = 0; r < n; ++r) {
      int lo = r, hi = r;
      while (lo > 0 && logit(r, lo - 1) >= underflow) --lo;
      while (hi + 1 < n && logit(r, hi + 1) >= underflow) ++hi;
      auto band = P.row(r).segment(lo, hi - lo + 1).array();
      band = ((sorted.segment(lo, hi - lo + 1).array() - sorted[r]).square() / -temp).exp().transpose();
      band /= band.sum();
    }
  }

  int size() const { return int(order.size()); }

  // Token-indexed rows [n, cols] in sorted order.
  RowMatrix<T> gather(const T* rows, int cols) const {
    RowMatrix<T> out(size(), cols);
    for (int c = 0; c < size(); ++c) out.row(c) = Eigen::Map<const RowMatrix<T>>(rows + size_t(order[c]) * cols, 1, cols);
    return out;
  }
  // grad[order[c]] += sortedGrad[c]: the adjoint of gather.
  void scatterAdd(const RowMatrix<T>& sortedGrad, T* grad) const {
    const int cols = int(sortedGrad.cols());
    for (int c = 0; c < size(); ++c)
      Eigen::Map<RowMatrix<T>>(grad + size_t(order[c]) * cols, 1, cols) += sortedGrad.row(c);
  }

  // SoftSort backward given dL/dP (spec §4.1: both the anchors s_r and the entries s_c carry gradient), as
  // the sorted-order gradient of the values [n, 1].
  RowMatrix<T> backward(const RowMatrix<T>& gP, T temp) const {
    const int n = size();
    const Array gLogit =
        P.array() * (gP.array().colwise() - (P.array() * gP.array()).rowwise().sum());
    // d logit[r, c]/d s_c = 2 (s_r − s_c)/t = −d logit[r, c]/d s_r.
    const auto slope = (sorted.rowwise().replicate(n) - sorted.transpose().colwise().replicate(n)).array() * (T(2) / temp);
    const Array g = gLogit * slope;
    return (g.colwise().sum().transpose() - g.rowwise().sum()).matrix();
  }
};

// One (batch, head): raw pointers into contiguous tensors.
template <class T>
struct Head {
  const T *sq, *sk, *q, *k, *v;  // [L, n], [L, n], [n, m], [n, m], [n, dv]
  int L, n, m, dv;
};

template <class T>
struct Slice {
  SoftSortMatrix<T> a, b;  // A_l (queries), B_l (keys)
  RowMatrix<T> qa, ka, vb;  // Q in A's sorted order; K, V in B's
  RowMatrix<T> q2a, k2b;   // squared norms [n, 1], same orders
  RowMatrix<T> aq, bk, bv;  // A_l Q, B_l K [n, m]; B_l V [n, dv]
  T cost = 0;              // D_l = <C, U_l>
};

// Slice plans' factors and costs, and the slice weights w = softmax(−tau·D) (spec §3.2 steps 1–4).
template <class T>
Vector<T> evaluateSlices(const Head<T>& h, T temp, T tau, std::vector<Slice<T>>& slices) {
  slices.resize(h.L);
  Vector<T> logits(h.L);
  for (int l = 0; l < h.L; ++l) {
    Slice<T>& s = slices[l];
    s.a.build(h.sq + size_t(l) * h.n, h.n, temp);
    s.b.build(h.sk + size_t(l) * h.n, h.n, temp);
    s.qa = s.a.gather(h.q, h.m);
    s.ka = s.b.gather(h.k, h.m);
    s.vb = s.b.gather(h.v, h.dv);
    s.q2a = s.qa.rowwise().squaredNorm();
    s.k2b = s.ka.rowwise().squaredNorm();
    s.aq.noalias() = s.a.P * s.qa;
    s.bk.noalias() = s.b.P * s.ka;
    s.bv.noalias() = s.b.P * s.vb;
    s.cost = ((s.a.P * s.q2a).sum() + (s.b.P * s.k2b).sum() - 2 * s.aq.cwiseProduct(s.bk).sum()) / T(h.n);
    logits[l] = -tau * s.cost;
  }
  const Vector<T> w = (logits.array() - logits.maxCoeff()).exp().matrix();
  return w / w.sum();
}

template <class T>
void forwardHead(const Head<T>& h, T temp, T tau, T* out) {
  thread_local std::vector<Slice<T>> slices;
  const Vector<T> w = evaluateSlices(h, temp, tau, slices);
  Eigen::Map<RowMatrix<T>>(out, h.n, h.dv).setZero();
  for (int l = 0; l < h.L; ++l) slices[l].a.scatterAdd(w[l] * (slices[l].a.P.transpose() * slices[l].bv), out);
}

// Reverse mode of forwardHead, recomputing the slices (cheaper than keeping them between the passes).
template <class T>
void backwardHead(const Head<T>& h, T temp, T tau, const T* gOut, T* gsq, T* gsk, T* gq, T* gk, T* gv) {
  thread_local std::vector<Slice<T>> slices;
  const Vector<T> w = evaluateSlices(h, temp, tau, slices);
  const int n = h.n;
  // dL/dw_l = <gOut, A_lᵀ Y_l> = <A_l gOut, Y_l> with Y_l = B_l V.
  std::vector<RowMatrix<T>> gOutA(h.L), aGrad(h.L);
  Vector<T> gw(h.L);
  for (int l = 0; l < h.L; ++l) {
    gOutA[l] = slices[l].a.gather(gOut, h.dv);
    aGrad[l].noalias() = slices[l].a.P * gOutA[l];
    gw[l] = aGrad[l].cwiseProduct(slices[l].bv).sum();
  }
  const T mean = w.dot(gw);
  const RowMatrix<T> ones = RowMatrix<T>::Ones(n, 1);
  for (int l = 0; l < h.L; ++l) {
    const Slice<T>& s = slices[l];
    const T gCost = -tau * w[l] * (gw[l] - mean) / T(n);  // dL/dD_l (softmax backward), with D's 1/n
    const RowMatrix<T> gy = w[l] * aGrad[l];              // dL/dY_l
    // A_l: through the output (w_l Y_l[r]·gOut[c]) and the cost (q²_c − 2 (B_l K)_r·q_c).
    RowMatrix<T> gA = w[l] * s.bv * gOutA[l].transpose() + gCost * (ones * s.q2a.transpose());
    gA.noalias() -= (2 * gCost) * s.bk * s.qa.transpose();
    // B_l: through Y_l = B_l V and the cost (k²_c − 2 (A_l Q)_r·k_c).
    RowMatrix<T> gB = gy * s.vb.transpose() + gCost * (ones * s.k2b.transpose());
    gB.noalias() -= (2 * gCost) * s.aq * s.ka.transpose();
    // C's own dependence on q_c and k_c: 2·Σ_r P[r, c]·(q_c − (B_l K)_r), likewise for the keys.
    RowMatrix<T> gqa = s.a.P.colwise().sum().transpose().asDiagonal() * s.qa;
    gqa.noalias() -= s.a.P.transpose() * s.bk;
    RowMatrix<T> gka = s.b.P.colwise().sum().transpose().asDiagonal() * s.ka;
    gka.noalias() -= s.b.P.transpose() * s.aq;
    s.a.scatterAdd((2 * gCost) * gqa, gq);
    s.b.scatterAdd((2 * gCost) * gka, gk);
    s.b.scatterAdd(s.b.P.transpose() * gy, gv);
    s.a.scatterAdd(s.a.backward(gA, temp), gsq + size_t(l) * n);
    s.b.scatterAdd(s.b.backward(gB, temp), gsk + size_t(l) * n);
  }
}

template <class T>
Head<T> headAt(const std::vector<torch::Tensor>& in, int64_t bh) {
  const torch::Tensor &sq = in[0], &sk = in[1], &q = in[2], &k = in[3], &v = in[4];
  Head<T> h;
  h.L = int(sq.size(2));
  h.n = int(sq.size(3));
  h.m = int(q.size(3));
  h.dv = int(v.size(3));
  h.sq = sq.data_ptr<T>() + bh * h.L * h.n;
  h.sk = sk.data_ptr<T>() + bh * h.L * h.n;
  h.q = q.data_ptr<T>() + bh * h.n * h.m;
  h.k = k.data_ptr<T>() + bh * h.n * h.m;
  h.v = v.data_ptr<T>() + bh * h.n * h.dv;
  return h;
}

int64_t headCount(const torch::Tensor& t) { return t.size(0) * t.size(1); }

template <class T>
torch::Tensor forwardAll(const std::vector<torch::Tensor>& in, double temp, double tau) {
  torch::Tensor out = torch::empty_like(in[4]);
  T* o = out.data_ptr<T>();
  at::parallel_for(0, headCount(in[4]), 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const Head<T> h = headAt<T>(in, bh);
      forwardHead<T>(h, T(temp), T(tau), o + bh * h.n * h.dv);
    }
  });
  return out;
}

template <class T>
tensor_list backwardAll(const std::vector<torch::Tensor>& in, const torch::Tensor& gOut, double temp, double tau) {
  tensor_list g;
  for (const torch::Tensor& t : in) g.push_back(torch::zeros_like(t));
  const T* go = gOut.data_ptr<T>();
  at::parallel_for(0, headCount(in[4]), 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const Head<T> h = headAt<T>(in, bh);
      backwardHead<T>(h, T(temp), T(tau), go + bh * h.n * h.dv, g[0].data_ptr<T>() + bh * h.L * h.n,
                      g[1].data_ptr<T>() + bh * h.L * h.n, g[2].data_ptr<T>() + bh * h.n * h.m,
                      g[3].data_ptr<T>() + bh * h.n * h.m, g[4].data_ptr<T>() + bh * h.n * h.dv);
    }
  });
  return g;
}

class EspSoftOutputFunction : public torch::autograd::Function<EspSoftOutputFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& sq, const torch::Tensor& sk,
                               const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double temp,
                               double tau) {
    ctx->save_for_backward({sq, sk, q, k, v});
    ctx->saved_data["temp"] = temp;
    ctx->saved_data["tau"] = tau;
    const std::vector<torch::Tensor> in{sq, sk, q, k, v};
    return sq.scalar_type() == torch::kFloat64 ? forwardAll<double>(in, temp, tau) : forwardAll<float>(in, temp, tau);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list gradOutputs) {
    const std::vector<torch::Tensor> in = ctx->get_saved_variables();
    const torch::Tensor gOut = gradOutputs[0].contiguous();
    const double temp = ctx->saved_data["temp"].toDouble(), tau = ctx->saved_data["tau"].toDouble();
    tensor_list g = in[0].scalar_type() == torch::kFloat64 ? backwardAll<double>(in, gOut, temp, tau)
                                                            : backwardAll<float>(in, gOut, temp, tau);
    g.emplace_back();  // temp
    g.emplace_back();  // tau
    return g;
  }
};

}  // namespace

torch::Tensor espSoftOutput(const torch::Tensor& sq, const torch::Tensor& sk, const torch::Tensor& q,
                            const torch::Tensor& k, const torch::Tensor& v, double sortTemp, double tau) {
  const auto type = q.scalar_type();
  if (type != torch::kFloat32 && type != torch::kFloat64)
    throw InvalidArgument("esp: soft sorting needs float32 or float64 queries and keys");
  for (const torch::Tensor* t : {&sq, &sk, &k, &v})
    if (t->scalar_type() != type) throw InvalidArgument("esp: queries, keys, values and projections must share one type");
  if (!torch::isfinite(sq).all().item<bool>() || !torch::isfinite(sk).all().item<bool>())
    throw InvalidArgument("esp: the queries or keys hold NaN or Inf, which cannot be sorted; check the input "
                          "(or, in training, lower the learning rate)");
  return EspSoftOutputFunction::apply(sq.contiguous(), sk.contiguous(), q.contiguous(), k.contiguous(), v.contiguous(),
                                      sortTemp, tau);
}

}  // namespace tl
