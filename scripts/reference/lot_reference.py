"""Independent PyTorch reference for LOT attention (low-rank doubly stochastic attention via pivots).

Written independently from the paper's mathematics, never from the C++ sources, so that the fixtures it
produces are a real cross-check of core/ops/lot/. What it computes is documented in docs/operators/lot.md
and docs/conventions.md.

Conventions (one meaning everywhere):
  similarities S1 = Q Zᵀ/√d (queries × pivots), S2 = Z Kᵀ/√d (pivots × keys); 1/√d never on Z alone
  pivot masses w = softmax(θ / mass_temp)
  problems     (1) P1 ∈ Π(1/n_q, w) on S1, duals u1 (queries), v1 (pivots)
               (2) P2 ∈ Π(w, 1/n_k) on S2, duals u2 (pivots), v2 (keys)
               each max <S,P> + eps·H(P), solved in the log domain from zero duals by `budget` single
               normalisations, rows first (odd budget ends on rows); P_ij = exp((S_ij + u_i + v_j)/eps)
  coupling     A = n_q · P1 diag(1/w) P2 (attention scale); output O = n_q · P1 (diag(1/w) (P2 V))
  mask_mode    "subsequence" only: padded tokens are dropped, LOT runs on the valid tokens with
               marginals 1/n_valid; padded plan rows/columns, output rows, P1 rows and P2 columns are 0,
               and padded potentials u1, v2 are 0 (docs/operators/lot.md#masks).
"""
import math
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class LotResult:
    plan: torch.Tensor              # A = n_q · P1 diag(1/w) P2, rows = queries
    output: Optional[torch.Tensor]  # O = A V when V is given
    P1: torch.Tensor                # n_q × r, transport scale
    P2: torch.Tensor                # r × n_k
    w: torch.Tensor                 # pivot masses
    u1: torch.Tensor
    v1: torch.Tensor
    u2: torch.Tensor
    v2: torch.Tensor


def entropic_duals(s: torch.Tensor, log_a: torch.Tensor, log_b: torch.Tensor, eps: float, budget: int):
    """The Sinkhorn loop (docs/operators/sinkhorn.md#definition) in score coordinates: alternate exact row /
    column closures, rows first."""
    u = torch.zeros(s.shape[0], dtype=s.dtype)
    v = torch.zeros(s.shape[1], dtype=s.dtype)
    for t in range(budget):
        if t % 2 == 0:
            u = eps * log_a - eps * torch.logsumexp((s + v[None, :]) / eps, dim=1)
        else:
            v = eps * log_b - eps * torch.logsumexp((s + u[:, None]) / eps, dim=0)
    return u, v


def entropic_plan(s, u, v, eps):
    return torch.exp((s + u[:, None] + v[None, :]) / eps)


def _lot_unmasked(q, k, val, pivots, mass_logits, eps, budget, mass_temp) -> LotResult:
    n_q, n_k, d = q.shape[0], k.shape[0], q.shape[1]
    log_w = torch.log_softmax(mass_logits / mass_temp, dim=0)
    s1 = (q / math.sqrt(d)) @ pivots.T
    s2 = pivots @ (k / math.sqrt(d)).T
    u1, v1 = entropic_duals(s1, torch.full((n_q,), -math.log(n_q), dtype=q.dtype), log_w, eps, budget)
    u2, v2 = entropic_duals(s2, log_w, torch.full((n_k,), -math.log(n_k), dtype=q.dtype), eps, budget)
    p1 = entropic_plan(s1, u1, v1, eps)
    p2 = entropic_plan(s2, u2, v2, eps)
    inv_w = torch.exp(-log_w)
    plan = n_q * (p1 * inv_w[None, :]) @ p2
    output = None
    if val is not None:
        output = n_q * p1 @ (inv_w[:, None] * (p2 @ val))  # lazy order, O(n r d)
    return LotResult(plan, output, p1, p2, torch.exp(log_w), u1, v1, u2, v2)


def _scatter_rows(sub, idx, n):
    out = torch.zeros((n,) + tuple(sub.shape[1:]), dtype=sub.dtype)
    out[idx] = sub
    return out


def lot_attention(q, k, val=None, *, pivots, mass_logits, eps=1.0, budget=5, mass_temp=0.5, mask=None):
    """LOT attention with given pivots Z (r×d) and mass logits θ (r); mask_mode = subsequence."""
    r = pivots.shape[0]
    if budget < 1 or eps <= 0 or mass_temp <= 0:
        raise ValueError("need budget T >= 1, eps > 0 and mass_temp > 0")
    if pivots.shape[1] != q.shape[1] or mass_logits.shape != (r,):
        raise ValueError("pivots must be r×d and mass_logits of length r")
    if mask is None:
        if r > min(q.shape[0], k.shape[0]):
            raise ValueError("r must not exceed the number of tokens")
        return _lot_unmasked(q, k, val, pivots, mass_logits, eps, budget, mass_temp)
    idx = torch.nonzero(mask).squeeze(1)
    n = mask.shape[0]
    if r > idx.shape[0]:
        raise ValueError("r must not exceed the number of valid tokens")
    sub = _lot_unmasked(q[idx], k[idx], val[idx] if val is not None else None, pivots, mass_logits, eps, budget,
                        mass_temp)
    plan = torch.zeros((n, n), dtype=q.dtype)
    plan[idx[:, None], idx[None, :]] = sub.plan
    output = _scatter_rows(sub.output, idx, n) if val is not None else None
    return LotResult(plan, output, _scatter_rows(sub.P1, idx, n), _scatter_rows(sub.P2.T, idx, n).T, sub.w,
                     _scatter_rows(sub.u1, idx, n), sub.v1, sub.u2, _scatter_rows(sub.v2, idx, n))


def scaling_lot_plan(q, k, pivots, mass_logits, eps, budget, mass_temp):
    """A second formulation for self-checks: plain matrix scaling (P = diag(u) K diag(v)) of
    kernels exp(S/eps) with per-row maxima removed (the first row scaling absorbs them), glued as in
    docs/operators/lot.md#definition."""
    n_q, n_k, d = q.shape[0], k.shape[0], q.shape[1]
    w = torch.softmax(mass_logits / mass_temp, dim=0)

    def scale(s, a, b):
        p = torch.exp((s - s.max(dim=1, keepdim=True).values) / eps)
        for t in range(budget):
            if t % 2 == 0:
                p = p * (a / p.sum(1))[:, None]
            else:
                p = p * (b / p.sum(0))[None, :]
        return p

    p1 = scale(q @ pivots.T / math.sqrt(d), torch.full((n_q,), 1.0 / n_q, dtype=q.dtype), w)
    p2 = scale(pivots @ k.T / math.sqrt(d), w, torch.full((n_k,), 1.0 / n_k, dtype=q.dtype))
    return n_q * p1 @ torch.diag(1.0 / w) @ p2
