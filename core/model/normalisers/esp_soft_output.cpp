#include "model/normalisers/esp_soft_output.h"

#include <ATen/Parallel.h>
#include <torch/custom_class.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "common/argsort.h"
#include "common/errors.h"
#include "ops/esp/soft_sort.h"

namespace tl {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// Runs f(std::integral_constant<int, W>) with W = cols for the usual head widths, so that the per-entry row
// operations below compile to a few vector registers; other widths run with W = Eigen::Dynamic. Per entry
// there are only 16–32 floats of work, and dynamic-size rows made the whole training step twice as slow.
template <class F>
decltype(auto) withRowWidth(Eigen::Index cols, F&& f) {
  switch (cols) {
    case 8: return f(std::integral_constant<int, 8>{});
    case 16: return f(std::integral_constant<int, 16>{});
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 128: return f(std::integral_constant<int, 128>{});
    default: return f(std::integral_constant<int, Eigen::Dynamic>{});
  }
}

// Row `i` of a row-major matrix (or of a block of its columns) as a 1×W row vector.
template <int W, class Derived>
auto rowOf(const Eigen::MatrixBase<Derived>& m, Eigen::Index i) {
  using Row = const Eigen::Matrix<typename Derived::Scalar, 1, W>;
  return Eigen::Map<Row>(m.derived().data() + i * m.derived().outerStride(), m.cols());
}
template <int W, class T>
Eigen::Map<Eigen::Matrix<T, 1, W>> rowOf(RowMatrix<T>& m, Eigen::Index i) {
  return {m.data() + i * m.cols(), m.cols()};
}

// A token-indexed row-major array [n, cols]; gather puts several side by side, scatterAdd splits them.
template <class T>
struct ColumnBlock {
  T* data;
  int cols;
};

// One SoftSort matrix P (docs/operators/esp.md#soft-sorting: squared distance, ascending anchors;
// row r = rank r) with its columns in sorted order too: P[r, c] is the weight of token order[c]. In that
// order row r is a band [lo_r, lo_r + len_r) around c = r (the logits fall off monotonically away from the
// anchor), and both band ends only move right as r grows. Only the band is stored and multiplied:
// O(n·band) instead of O(n²).
template <class T>
class BandedSoftSort {
 public:
  void build(const T* values, int n, T temp) {
    // The stable order: ties by token index.
    thread_local ArgsortWorkspace<T> sortWorkspace;
    stableArgsort(values, size_t(n), order_, sortWorkspace);
    sorted_.resize(n);
    for (int c = 0; c < n; ++c) sorted_[c] = values[order_[c]];
    temp_ = temp;
    const T reach = softSortReach(temp);  // |s_c − s_r| <= reach  <=>  logit >= −floor (ops/esp/soft_sort.h)
    lo_.resize(n);
    start_.resize(n + 1);
    start_[0] = 0;
    int lo = 0, hi = 0;
    for (int r = 0; r < n; ++r) {
      while (sorted_[r] - sorted_[lo] > reach) ++lo;
      hi = std::max(hi, r);
      while (hi + 1 < n && sorted_[hi + 1] - sorted_[r] <= reach) ++hi;
      lo_[r] = lo;
      start_[r + 1] = start_[r] + hi - lo + 1;
    }
    weight_.resize(start_[n]);
    for (int r = 0; r < n; ++r)
      for (int i = start_[r], c = lo_[r]; i < start_[r + 1]; ++i, ++c)
        weight_[i] = (sorted_[c] - sorted_[r]) * (sorted_[c] - sorted_[r]) / -temp;
    // One vectorised exp over every band. The anchor's logit is exactly 0: no max-shift is needed.
    weight_ = weight_.exp();
    for (int r = 0; r < n; ++r) {
      auto row = weight_.segment(start_[r], start_[r + 1] - start_[r]);
      row /= row.sum();
    }
  }

  int size() const { return int(order_.size()); }

  // y = P x for x [n, cols] in sorted order.
  template <class Derived>
  void multiply(const Eigen::MatrixBase<Derived>& x, RowMatrix<T>& y) const {
    y.resize(size(), x.cols());
    withRowWidth(x.cols(), [&](auto width) {
      constexpr int W = decltype(width)::value;
      for (int r = 0; r < size(); ++r) {
        Eigen::Matrix<T, 1, W> sum = Eigen::Matrix<T, 1, W>::Zero(x.cols());
        for (int i = start_[r], c = lo_[r]; i < start_[r + 1]; ++i, ++c) sum.noalias() += weight_[i] * rowOf<W>(x, c);
        rowOf<W>(y, r) = sum;
      }
    });
  }
  // x += Pᵀ y.
  template <class Derived>
  void multiplyTransposedAdd(const Eigen::MatrixBase<Derived>& y, RowMatrix<T>& x) const {
    withRowWidth(x.cols(), [&](auto width) {
      constexpr int W = decltype(width)::value;
      for (int r = 0; r < size(); ++r) {
        const Eigen::Matrix<T, 1, W> yr = rowOf<W>(y, r);
        for (int i = start_[r], c = lo_[r]; i < start_[r + 1]; ++i, ++c) rowOf<W>(x, c).noalias() += weight_[i] * yr;
      }
    });
  }
  Vector<T> columnSums() const {
    Vector<T> sums = Vector<T>::Zero(size());
    for (int r = 0; r < size(); ++r)
      for (int i = start_[r], c = lo_[r]; i < start_[r + 1]; ++i, ++c) sums[c] += weight_[i];
    return sums;
  }

  // SoftSort backward (docs/operators/esp.md#soft-sorting: both the anchors s_r and the entries s_c carry
  // gradient) for dL/dP[r, c] = left[r]·right[c] + column[c], which is how every gradient reaching P factors;
  // only the band's entries are formed. Returns the sorted-order gradient of the values.
  template <class Derived>
  Vector<T> backward(const Eigen::MatrixBase<Derived>& left, const RowMatrix<T>& right, const Vector<T>& column) const {
    Vector<T> grad = Vector<T>::Zero(size());
    thread_local std::vector<T> gradP;
    withRowWidth(left.cols(), [&](auto width) {
      constexpr int W = decltype(width)::value;
      for (int r = 0; r < size(); ++r) {
        const Eigen::Matrix<T, 1, W> lr = rowOf<W>(left, r);
        gradP.resize(size_t(start_[r + 1] - start_[r]));
        T rowDot = 0;  // Σ_c P[r, c]·dL/dP[r, c], the softmax's own backward
        for (int i = start_[r], c = lo_[r]; i < start_[r + 1]; ++i, ++c) {
          const T g = lr.dot(rowOf<W>(right, c)) + column[c];
          gradP[i - start_[r]] = g;
          rowDot += weight_[i] * g;
        }
        for (int i = start_[r], c = lo_[r]; i < start_[r + 1]; ++i, ++c) {
          // d logit[r, c]/d s_c = 2 (s_r − s_c)/t = −d logit[r, c]/d s_r.
          const T g = weight_[i] * (gradP[i - start_[r]] - rowDot) * T(2) * (sorted_[r] - sorted_[c]) / temp_;
          grad[c] += g;
          grad[r] -= g;
        }
      }
    });
    return grad;
  }

  // Token-indexed rows in sorted order, the blocks' columns side by side: [n, Σ cols].
  void gather(std::initializer_list<ColumnBlock<const T>> blocks, RowMatrix<T>& out) const {
    int cols = 0;
    for (const auto& block : blocks) cols += block.cols;
    out.resize(size(), cols);
    for (int c = 0; c < size(); ++c) {
      T* to = out.data() + size_t(c) * cols;
      for (const auto& block : blocks)
        to = std::copy_n(block.data + size_t(order_[c]) * block.cols, block.cols, to);
    }
  }
  // The adjoint of gather: each block's rows order[c] += its columns of sortedGrad[c].
  void scatterAdd(const RowMatrix<T>& sortedGrad, std::initializer_list<ColumnBlock<T>> blocks) const {
    int first = 0;
    for (const auto& block : blocks) {
      withRowWidth(block.cols, [&](auto width) {
        constexpr int W = decltype(width)::value;
        for (int c = 0; c < size(); ++c)
          Eigen::Map<Eigen::Matrix<T, 1, W>>(block.data + size_t(order_[c]) * block.cols, block.cols) +=
              rowOf<W>(sortedGrad.middleCols(first, block.cols), c);
      });
      first += block.cols;
    }
  }
  void scatterAdd(const Vector<T>& sortedGrad, T* grad) const {
    for (int c = 0; c < size(); ++c) grad[order_[c]] += sortedGrad[c];
  }

 private:
  std::vector<int> order_;  // sorted position → token
  std::vector<T> sorted_;   // values[order[c]], ascending
  std::vector<int> lo_;     // first column of row r's band
  std::vector<int> start_;  // row r's entries are weight_[start_[r] .. start_[r + 1])
  // Eigen's own aligned storage: its vectorised exp and sums treat unaligned leading entries with scalar
  // code, which rounds differently, so over a plain heap buffer the results depended on its address.
  Eigen::Array<T, Eigen::Dynamic, 1> weight_;
  T temp_ = 1;
};

// One (batch, head): raw pointers into contiguous tensors.
template <class T>
struct Head {
  const T *sq, *sk, *q, *k, *v;  // [L, n], [L, n], [n, m], [n, m], [n, dv]
  int L, n, m, dv;
};

// The SoftSort matrices of one slice: A_l of the queries' projections, B_l of the keys'.
template <class T>
struct SlicePair {
  BandedSoftSort<T> a, b;
};

// The SoftSort bands of every (batch, head) and slice, built by the forward pass and used again by the
// backward pass instead of being rebuilt (building them was a third of a training step). The autograd
// context holds them until the backward pass has run: about 60 MB per layer at B = 128, H = 4, L = 16.
template <class T>
struct SliceSorts : torch::CustomClassHolder {
  std::vector<std::vector<SlicePair<T>>> heads;  // [B·H][L]
};
// An autograd context keeps objects only as IValues, and those need the class registered with TorchScript.
const auto kRegisterFloatSorts = torch::class_<SliceSorts<float>>("transportlens", "EspSliceSortsFloat");
const auto kRegisterDoubleSorts = torch::class_<SliceSorts<double>>("transportlens", "EspSliceSortsDouble");

template <class T>
void sortSlices(const Head<T>& h, T temp, std::vector<SlicePair<T>>& sorts) {
  sorts.resize(h.L);
  for (int l = 0; l < h.L; ++l) {
    sorts[l].a.build(h.sq + size_t(l) * h.n, h.n, temp);
    sorts[l].b.build(h.sk + size_t(l) * h.n, h.n, temp);
  }
}

// One slice's products with its SoftSort matrices.
template <class T>
struct Slice {
  const BandedSoftSort<T>* a;  // A_l
  const BandedSoftSort<T>* b;  // B_l
  RowMatrix<T> qa, kva;        // Q in A's sorted order [n, m]; [K V] in B's [n, m + dv]
  Vector<T> q2a, k2b;          // squared norms, same orders
  Vector<T> colA, colB;        // column sums of A_l, B_l
  RowMatrix<T> aq, bkv;        // A_l Q [n, m]; B_l [K V] = [B_l K, Y_l = B_l V] [n, m + dv]
  T cost = 0;                  // D_l = <C, U_l>
};

// Slice plans' factors and costs, and the slice weights w = softmax(−tau·D)
// (docs/operators/esp.md#definition).
template <class T>
Vector<T> evaluateSlices(const Head<T>& h, T tau, const std::vector<SlicePair<T>>& sorts, std::vector<Slice<T>>& slices) {
  slices.resize(h.L);
  Vector<T> logits(h.L);
  for (int l = 0; l < h.L; ++l) {
    Slice<T>& s = slices[l];
    s.a = &sorts[l].a;
    s.b = &sorts[l].b;
    s.a->gather({{h.q, h.m}}, s.qa);
    s.b->gather({{h.k, h.m}, {h.v, h.dv}}, s.kva);
    s.q2a = s.qa.rowwise().squaredNorm();
    s.k2b = s.kva.leftCols(h.m).rowwise().squaredNorm();
    s.colA = s.a->columnSums();
    s.colB = s.b->columnSums();
    s.a->multiply(s.qa, s.aq);
    s.b->multiply(s.kva, s.bkv);
    // Σ_r (A q²)_r = Σ_c colsum(A)_c q²_c.
    s.cost = (s.colA.dot(s.q2a) + s.colB.dot(s.k2b) - 2 * s.aq.cwiseProduct(s.bkv.leftCols(h.m)).sum()) / T(h.n);
    logits[l] = -tau * s.cost;
  }
  const Vector<T> w = (logits.array() - logits.maxCoeff()).exp().matrix();
  return w / w.sum();
}

template <class T>
void forwardHead(const Head<T>& h, T tau, const std::vector<SlicePair<T>>& sorts, T* out) {
  thread_local std::vector<Slice<T>> slices;
  thread_local RowMatrix<T> y, sortedOut;
  const Vector<T> w = evaluateSlices(h, tau, sorts, slices);
  Eigen::Map<RowMatrix<T>>(out, h.n, h.dv).setZero();
  for (int l = 0; l < h.L; ++l) {
    y = w[l] * slices[l].bkv.rightCols(h.dv);
    sortedOut.setZero(h.n, h.dv);
    slices[l].a->multiplyTransposedAdd(y, sortedOut);
    slices[l].a->scatterAdd(sortedOut, {{out, h.dv}});
  }
}

// Reverse mode of forwardHead on the forward pass's SoftSort bands; the products are recomputed (cheaper
// than keeping them between the passes).
template <class T>
void backwardHead(const Head<T>& h, T tau, const std::vector<SlicePair<T>>& sorts, const T* gOut, T* gsq, T* gsk,
                  T* gq, T* gk, T* gv) {
  thread_local std::vector<Slice<T>> slices;
  thread_local std::vector<RowMatrix<T>> gOutA, aGrad;
  const Vector<T> w = evaluateSlices(h, tau, sorts, slices);
  const int n = h.n, m = h.m, dv = h.dv;
  // dL/dw_l = <gOut, A_lᵀ Y_l> = <A_l gOut, Y_l>.
  gOutA.resize(h.L);
  aGrad.resize(h.L);
  Vector<T> gw(h.L);
  for (int l = 0; l < h.L; ++l) {
    slices[l].a->gather({{gOut, dv}}, gOutA[l]);
    slices[l].a->multiply(gOutA[l], aGrad[l]);
    gw[l] = aGrad[l].cwiseProduct(slices[l].bkv.rightCols(dv)).sum();
  }
  const T mean = w.dot(gw);
  thread_local RowMatrix<T> right, ag, toKeys, toQueries;
  for (int l = 0; l < h.L; ++l) {
    const Slice<T>& s = slices[l];
    const T gCost = -tau * w[l] * (gw[l] - mean) / T(n);  // dL/dD_l (softmax backward), with D's 1/n
    // dL/dA_l[r, c] through the cost, q²_c − 2 (B_l K)_r·q_c, and the output, w_l Y_l[r]·gOut[c]: that is
    // [B_l K, Y_l][r]·[−2 gCost Q, w_l gOut][c] + gCost q²_c.
    right.resize(n, m + dv);
    right << (-2 * gCost) * s.qa, w[l] * gOutA[l];
    s.a->scatterAdd(s.a->backward(s.bkv, right, gCost * s.q2a), gsq + size_t(l) * n);
    // dL/dB_l[r, c] through the cost, k²_c − 2 (A_l Q)_r·k_c, and Y_l = B_l V with dL/dY_l = w_l A_l gOut:
    // [A_l Q, dL/dY_l][r]·[−2 gCost K, V][c] + gCost k²_c.
    ag.resize(n, m + dv);
    ag << s.aq, w[l] * aGrad[l];
    right = s.kva;
    right.leftCols(m) *= -2 * gCost;
    s.b->scatterAdd(s.b->backward(ag, right, gCost * s.k2b), gsk + size_t(l) * n);
    // The cost's own dependence on q_c and k_c, 2·Σ_r P[r, c]·(q_c − (B_l K)_r) and likewise for the keys,
    // and V's gradient B_lᵀ dL/dY_l: B_lᵀ [A_l Q, dL/dY_l] serves both.
    toKeys.setZero(n, m + dv);
    s.b->multiplyTransposedAdd(ag, toKeys);
    toKeys.leftCols(m) = (2 * gCost) * (s.colB.asDiagonal() * s.kva.leftCols(m) - toKeys.leftCols(m));
    s.b->scatterAdd(toKeys, {{gk, m}, {gv, dv}});
    toQueries.setZero(n, m);
    s.a->multiplyTransposedAdd(s.bkv.leftCols(m), toQueries);
    toQueries = (2 * gCost) * (s.colA.asDiagonal() * s.qa - toQueries);
    s.a->scatterAdd(toQueries, {{gq, m}});
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
torch::Tensor forwardAll(const std::vector<torch::Tensor>& in, double temp, double tau, SliceSorts<T>& sorts) {
  torch::Tensor out = torch::empty_like(in[4]);
  T* o = out.data_ptr<T>();
  sorts.heads.resize(size_t(headCount(in[4])));
  at::parallel_for(0, headCount(in[4]), 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const Head<T> h = headAt<T>(in, bh);
      sortSlices<T>(h, T(temp), sorts.heads[bh]);
      forwardHead<T>(h, T(tau), sorts.heads[bh], o + bh * h.n * h.dv);
    }
  });
  return out;
}

template <class T>
tensor_list backwardAll(const std::vector<torch::Tensor>& in, const torch::Tensor& gOut, double tau,
                        const SliceSorts<T>& sorts) {
  tensor_list g;
  for (const torch::Tensor& t : in) g.push_back(torch::zeros_like(t));
  const T* go = gOut.data_ptr<T>();
  at::parallel_for(0, headCount(in[4]), 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const Head<T> h = headAt<T>(in, bh);
      backwardHead<T>(h, T(tau), sorts.heads[bh], go + bh * h.n * h.dv, g[0].data_ptr<T>() + bh * h.L * h.n,
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
    ctx->saved_data["tau"] = tau;
    const std::vector<torch::Tensor> in{sq, sk, q, k, v};
    return sq.scalar_type() == torch::kFloat64 ? forwardTyped<double>(ctx, in, temp, tau)
                                               : forwardTyped<float>(ctx, in, temp, tau);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list gradOutputs) {
    const std::vector<torch::Tensor> in = ctx->get_saved_variables();
    const torch::Tensor gOut = gradOutputs[0].contiguous();
    const double tau = ctx->saved_data["tau"].toDouble();
    const c10::IValue& sorts = ctx->saved_data["sorts"];
    tensor_list g = in[0].scalar_type() == torch::kFloat64
                        ? backwardAll<double>(in, gOut, tau, *sorts.toCustomClass<SliceSorts<double>>())
                        : backwardAll<float>(in, gOut, tau, *sorts.toCustomClass<SliceSorts<float>>());
    g.emplace_back();  // temp
    g.emplace_back();  // tau
    return g;
  }

 private:
  template <class T>
  static torch::Tensor forwardTyped(AutogradContext* ctx, const std::vector<torch::Tensor>& in, double temp,
                                    double tau) {
    auto sorts = c10::make_intrusive<SliceSorts<T>>();
    torch::Tensor out = forwardAll<T>(in, temp, tau, *sorts);
    ctx->saved_data["sorts"] = std::move(sorts);
    return out;
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
