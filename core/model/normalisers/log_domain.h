#pragma once
// The log-domain pieces that sinkhorn.cpp and lot.cpp share (the LibTorch counterpart of ops/log_domain.h
// and ops/sinkhorn_loop.h). LibTorch header: model/normalisers sources only.
#include <torch/torch.h>

#include <cmath>

namespace tl {

// Potentials (ut, vt) in eps units of the plan exp(X + ut ⊕ vt) after `budget` single normalisations, rows
// first (docs/operators/sinkhorn.md#definition; the same loop as ops/sinkhorn/sinkhorn_loop.h). X [..., n_r, n_c] = S/eps; logRow and
// logCol broadcast to [..., n_r] and [..., n_c]. A −inf log marginal marks an inactive token: its potential
// becomes −inf − (finite LSE) = −inf, so it carries no mass and no NaN reaches the gradients.
struct Potentials {
  torch::Tensor ut, vt;
};

inline Potentials alternateNormalisations(const torch::Tensor& X, const torch::Tensor& logRow,
                                          const torch::Tensor& logCol, int budget) {
  Potentials p;
  p.vt = torch::where(torch::isinf(logCol), logCol, torch::zeros_like(logCol));
  for (int t = 1; t <= budget; ++t) {
    if (t % 2 == 1)
      p.ut = logRow - torch::logsumexp(X + p.vt.unsqueeze(-2), -1);
    else
      p.vt = logCol - torch::logsumexp(X + p.ut.unsqueeze(-1), -2);
  }
  return p;  // budget >= 1 (the schema's range), so ut is set
}

inline torch::Tensor planOf(const torch::Tensor& X, const Potentials& p) {
  return torch::exp(X + p.ut.unsqueeze(-1) + p.vt.unsqueeze(-2));
}

// X = S/eps = (QKᵀ/√d)/eps, divided in this order as the core does (ops/score_geometry.cpp), so float32
// results round alike.
inline torch::Tensor scaledScores(const torch::Tensor& q, const torch::Tensor& k, double eps) {
  return torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1))) / eps;
}

// log(1/n) for each of n tokens, in `like`'s options.
inline torch::Tensor logUniform(int64_t n, const torch::Tensor& like) {
  return torch::full({n}, -std::log(double(n)), like.options());
}

}  // namespace tl
