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

// exp(−x) is exactly 0 in T for x beyond this: the SoftSort logits a dense softmax turns into zeros.
template <class T>
T underflowLogit() {
  return -std::log(std::numeric_limits<T>::denorm_min());
}

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// One SoftSort matrix P (spec/esp.md §4.1: squared distance, ascending anchors; row r = rank r) stored by
// its non-zero band. In sorted order the logit −(s_r − s_c)²/t falls off monotonically away from c = r, so
// row r's non-zeros are the sorted positions first[r] .. first[r] + width(r) − 1. Token-indexed rows are
// gathered into sorted order once, so every band product below is a small dense block operation.
template <class T>
struct BandedSoftSort {
  std::vector<int> order;         // sorted position → token
  Vector<T> sorted;               // values[order[c]], ascending
  std::vector<int> first, start;  // row r: first sorted position, offset into weights (start[n] = total)
  std::vector<T> weights;

  void build(const T* values, int n, T temp) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return values[a] < values[b]; });
    sorted.resize(n);
    for (int c = 0; c < n; ++c) sorted[c] = values[order[c]];
    first.resize(n);
    start.resize(n + 1);
    weights.clear();
    const T cutoff = underflowLogit<T>();
    auto logit = [&](int r, int c) { return (sorted[r] - sorted[c]) * (sorted[r] - sorted[c]) / temp; };
    for (int r = 0; r < n; ++r) {
      int lo = r, hi = r;
      while (lo > 0 && logit(r, lo - 1) <= cutoff) --lo;
      while (hi + 1 < n && logit(r, hi + 1) <= cutoff) ++hi;
      first[r] = lo;
      start[r] = int(weights.size());
      // The largest logit is exactly 0 (the anchor is one of the entries), so no max-shift is needed.
      T total = 0;
      for (int c = lo; c <= hi; ++c) total += weights.emplace_back(std::exp(-logit(r, c)));
      for (int c = lo; c <= hi; ++c) weights[start[r] + c - lo] /= total;
    }
    start[n] = int(weights.size());
  }

  int size() const { return int(order.size()); }
  int width(int r) const { return start[r + 1] - start[r]; }
  Eigen::Map<const Vector<T>> row(int r) const { return {weights.data() + start[r], width(r)}; }

  // Token-indexed rows [n, cols] in sorted order.
  RowMatrix<T> gather(const T* rows, int cols) const {
    RowMatrix<T> out(size(), cols);
    for (int c = 0; c < size(); ++c) out.row(c) = Eigen::Map<const Vector<T>>(rows + size_t(order[c]) * cols, cols);
    return out;
  }
  // grad[order[c]] += sortedGrad[c]: the adjoint of gather (rows [n, cols], or values [n]).
  void scatterAdd(const Vector<T>& sortedGrad, T* grad) const {
    for (int c = 0; c < size(); ++c) grad[order[c]] += sortedGrad[c];
  }
  void scatterAdd(const RowMatrix<T>& sortedGrad, T* grad) const {
    const int cols = int(sortedGrad.cols());
    for (int c = 0; c < size(); ++c)
      Eigen::Map<Vector<T>>(grad + size_t(order[c]) * cols, cols) += sortedGrad.row(c).transpose();
  }

  // P times token-indexed rows already gathered in sorted order: [n, cols].
  RowMatrix<T> times(const RowMatrix<T>& sortedRows) const {
    RowMatrix<T> out(size(), sortedRows.cols());
    for (int r = 0; r < size(); ++r) out.row(r) = row(r).transpose() * sortedRows.middleRows(first[r], width(r));
    return out;
  }
  // sortedOut += scale·Pᵀ·ranked, in sorted order.
  void addTransposeTimes(const RowMatrix<T>& ranked, T scale, RowMatrix<T>& sortedOut) const {
    for (int r = 0; r < size(); ++r)
      sortedOut.middleRows(first[r], width(r)).noalias() += (scale * row(r)) * ranked.row(r);
  }

  // SoftSort backward for row r given dL/dP on its band (spec §4.1: both the anchor s_r and the entries s_c
  // carry gradient), accumulated into the sorted-order gradient of the values.
  template <class GradRow>
  void backwardRow(int r, const GradRow& gradRow, T temp, Vector<T>& sortedGrad) const {
    const auto p = row(r);
    const auto gaps = sorted.segment(first[r], width(r)).array() - sorted[r];
    // dL/dlogit ⊙ d logit/d s_c, with logit = −(s_r − s_c)²/t.
    const auto gEntry = p.array() * (gradRow.array() - p.dot(gradRow)) * (T(-2) / temp) * gaps;
    sortedGrad.segment(first[r], width(r)) += gEntry.matrix();
    sortedGrad[r] -= gEntry.sum();
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
  BandedSoftSort<T> a, b;          // A_l (queries), B_l (keys)
  RowMatrix<T> qa, ka, vb;         // Q in A's sorted order; K, V in B's
  Vector<T> q2a, k2b;              // squared norms, same orders
  RowMatrix<T> aq, bk, bv;         // A_l Q, B_l K [n, m]; B_l V [n, dv]
  T cost = 0;                      // D_l = <C, U_l>
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
    s.aq = s.a.times(s.qa);
    s.bk = s.b.times(s.ka);
    s.bv = s.b.times(s.vb);
    const Vector<T> aq2 = s.a.times(s.q2a), bk2 = s.b.times(s.k2b);
    s.cost = (aq2.sum() + bk2.sum() - 2 * s.aq.cwiseProduct(s.bk).sum()) / T(h.n);
    logits[l] = -tau * s.cost;
  }
  const Vector<T> w = (logits.array() - logits.maxCoeff()).exp().matrix();
  return w / w.sum();
}

template <class T>
void forwardHead(const Head<T>& h, T temp, T tau, T* out) {
  thread_local std::vector<Slice<T>> slices;
  const Vector<T> w = evaluateSlices(h, temp, tau, slices);
  Eigen::Map<RowMatrix<T>> o(out, h.n, h.dv);
  o.setZero();
  for (int l = 0; l < h.L; ++l) {
    RowMatrix<T> sortedOut = RowMatrix<T>::Zero(h.n, h.dv);
    slices[l].a.addTransposeTimes(slices[l].bv, w[l], sortedOut);
    slices[l].a.scatterAdd(sortedOut, out);
  }
}

// Reverse mode of forwardHead, recomputing the bands (cheaper than keeping them between passes).
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
    aGrad[l] = slices[l].a.times(gOutA[l]);
    gw[l] = aGrad[l].cwiseProduct(slices[l].bv).sum();
  }
  const T mean = w.dot(gw);
  // Per-row band buffers, sized once: the loop below runs n·L times per head.
  Vector<T> gA(n), gB(n), pa(n), pb(n);
  for (int l = 0; l < h.L; ++l) {
    const Slice<T>& s = slices[l];
    const T gCost = -tau * w[l] * (gw[l] - mean) / T(n);  // dL/dD_l (softmax backward), with D's 1/n
    Vector<T> gsa = Vector<T>::Zero(n), gsb = Vector<T>::Zero(n);
    RowMatrix<T> gqa = RowMatrix<T>::Zero(n, h.m), gka = RowMatrix<T>::Zero(n, h.m), gvb = RowMatrix<T>::Zero(n, h.dv);
    for (int r = 0; r < n; ++r) {
      // A_l: through the output (w_l Y_l[r]·gOut[i]) and the cost (q²_i − 2 (B_l K)_r·q_i).
      const int fa = s.a.first[r], wa = s.a.width(r);
      const auto qBlock = s.qa.middleRows(fa, wa);
      auto gARow = gA.head(wa);
      gARow.noalias() = gOutA[l].middleRows(fa, wa) * s.bv.row(r).transpose();
      gARow *= w[l];
      gARow += gCost * s.q2a.segment(fa, wa);
      gARow.noalias() -= (2 * gCost) * (qBlock * s.bk.row(r).transpose());
      // C's own dependence on q_i: 2·P[r, i]·(q_i − (B_l K)_r).
      auto paRow = pa.head(wa);
      paRow = (2 * gCost) * s.a.row(r);
      gqa.middleRows(fa, wa) += paRow.asDiagonal() * qBlock;
      gqa.middleRows(fa, wa).noalias() -= paRow * s.bk.row(r);
      s.a.backwardRow(r, gARow, temp, gsa);
      // B_l: through Y_l = B_l V (gY = w_l A_l gOut) and the cost (k²_j − 2 (A_l Q)_r·k_j).
      const int fb = s.b.first[r], wb = s.b.width(r);
      const auto kBlock = s.ka.middleRows(fb, wb);
      const auto gy = aGrad[l].row(r);
      auto gBRow = gB.head(wb);
      gBRow.noalias() = s.vb.middleRows(fb, wb) * gy.transpose();
      gBRow *= w[l];
      gBRow += gCost * s.k2b.segment(fb, wb);
      gBRow.noalias() -= (2 * gCost) * (kBlock * s.aq.row(r).transpose());
      auto pbRow = pb.head(wb);
      pbRow = (2 * gCost) * s.b.row(r);
      gka.middleRows(fb, wb) += pbRow.asDiagonal() * kBlock;
      gka.middleRows(fb, wb).noalias() -= pbRow * s.aq.row(r);
      gvb.middleRows(fb, wb).noalias() += (w[l] * s.b.row(r)) * gy;
      s.b.backwardRow(r, gBRow, temp, gsb);
    }
    s.a.scatterAdd(gqa, gq);
    s.b.scatterAdd(gka, gk);
    s.b.scatterAdd(gvb, gv);
    s.a.scatterAdd(gsa, gsq + size_t(l) * n);
    s.b.scatterAdd(gsb, gsk + size_t(l) * n);
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
