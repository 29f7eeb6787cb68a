"""Independent PyTorch reference for softmax and log-domain Sinkhorn attention.

Written independently from the papers' mathematics, never from the C++ sources, so that the fixtures it
produces are a real cross-check of core/ops/sinkhorn/ and core/ops/softmax/. What it computes is documented in
docs/conventions.md, docs/operators/sinkhorn.md and docs/operators/softmax.md.

Conventions (one meaning everywhere):
  scores      S = Q Kᵀ / √d, kernel exp(S / eps)
  budget      T single normalisations, rows first (T = 1 is row softmax, even T ends on columns)
  duals       u (queries), v (keys) in score coordinates: P_ij = exp((S_ij + u_i + v_j) / eps)
  scales      transport plan P (marginals mu, nu) and attention A = n_q · P; output O = A V
  mask_mode   "subsequence": padded tokens are dropped, the operator runs on the valid block with
              marginals 1/n_valid; padded plan rows/columns are 0 and padded duals -inf.
              "keep-queries" (docs/conventions.md#masks): padded keys get nu_j = 0 and v_j = -inf; every query
              row is kept with mu_i = 1/n.
"""
import math
from dataclasses import dataclass
from typing import Optional

import torch

NEG_INF = float("-inf")


@dataclass
class AttentionResult:
    plan: torch.Tensor    # A = n_q · P, rows = queries
    u: torch.Tensor       # final query dual (score coordinates)
    v: torch.Tensor       # final key dual (score coordinates)
    output: Optional[torch.Tensor]  # O = A V when V is given


def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q @ k.T / math.sqrt(q.shape[1])


def safe_logsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """log Σ exp(x) along `dim`; an all -inf slice gives -inf, never NaN (docs/conventions.md#log-domain)."""
    m = x.max(dim=dim, keepdim=True).values
    m = torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)
    return (m + torch.log(torch.exp(x - m).sum(dim=dim, keepdim=True))).squeeze(dim)


def sinkhorn_duals(s: torch.Tensor, eps: float, budget: int, log_mu: torch.Tensor, log_nu: torch.Tensor):
    """docs/operators/sinkhorn.md#definition: alternate exact c-transforms, rows first, for `budget` single
    normalisations.

    A key with zero mass (log_nu = -inf) keeps v_j = -inf throughout (docs/conventions.md#log-domain).
    """
    key_active = torch.isfinite(log_nu)
    u = torch.zeros(s.shape[0], dtype=s.dtype)
    v = torch.where(key_active, torch.zeros_like(log_nu), torch.full_like(log_nu, NEG_INF))
    for t in range(1, budget + 1):
        if t % 2 == 1:  # row closure: source c-transform of v
            u = eps * log_mu - eps * safe_logsumexp((s + v[None, :]) / eps, dim=1)
        else:           # column closure: key c-transform of u, active keys only
            closed = eps * log_nu - eps * safe_logsumexp((s + u[:, None]) / eps, dim=0)
            v = torch.where(key_active, closed, torch.full_like(closed, NEG_INF))
    return u, v


def transport_plan(s: torch.Tensor, u: torch.Tensor, v: torch.Tensor, eps: float) -> torch.Tensor:
    # -inf duals give exp(-inf) = 0 inside the exponent: masks never multiply after exp.
    return torch.exp((s + u[:, None] + v[None, :]) / eps)


def _unmasked(q, k, val, eps, budget, key_active=None) -> AttentionResult:
    """All queries kept with mu = 1/n_q; keys with nu = 1/n_k, or 1/n on active keys and 0 elsewhere."""
    n_q, n_k = q.shape[0], k.shape[0]
    s = scores(q, k)
    log_mu = torch.full((n_q,), -math.log(n_q), dtype=q.dtype)
    log_nu = torch.full((n_k,), -math.log(n_k), dtype=q.dtype)
    if key_active is not None:
        log_nu = torch.where(key_active, log_nu, torch.full_like(log_nu, NEG_INF))
    u, v = sinkhorn_duals(s, eps, budget, log_mu, log_nu)
    plan = n_q * transport_plan(s, u, v, eps)
    return AttentionResult(plan, u, v, plan @ val if val is not None else None)


def _on_valid_subsequence(q, k, val, mask, eps, budget) -> AttentionResult:
    """mask_mode=subsequence: run on the valid tokens only, scatter back with zeros / -inf."""
    idx = torch.nonzero(mask).squeeze(1)
    sub = _unmasked(q[idx], k[idx], val[idx] if val is not None else None, eps, budget)
    n = mask.shape[0]
    plan = torch.zeros((n, n), dtype=q.dtype)
    plan[idx[:, None], idx[None, :]] = sub.plan
    u = torch.full((n,), NEG_INF, dtype=q.dtype)
    v = torch.full((n,), NEG_INF, dtype=q.dtype)
    u[idx], v[idx] = sub.u, sub.v
    output = None
    if val is not None:
        output = torch.zeros((n, val.shape[1]), dtype=q.dtype)
        output[idx] = sub.output
    return AttentionResult(plan, u, v, output)


def sinkhorn_attention(q, k, val=None, *, budget=10, eps=1.0, mask=None, mask_mode="subsequence"):
    """Finite-budget log-domain Sinkhorn attention (docs/operators/sinkhorn.md)."""
    if budget < 1:
        raise ValueError("budget T must be >= 1")
    if mask is None:
        return _unmasked(q, k, val, eps, budget)
    if q.shape[0] != k.shape[0] or mask.shape[0] != q.shape[0]:
        raise ValueError("a mask needs self-attention shapes: n_q = n_k = len(mask)")
    if mask_mode == "subsequence":
        return _on_valid_subsequence(q, k, val, mask, eps, budget)
    if mask_mode == "keep-queries":
        return _unmasked(q, k, val, eps, budget, key_active=mask)
    raise ValueError(f"unknown mask_mode {mask_mode!r}")


def softmax_attention(q, k, val=None, *, mask=None, mask_mode="subsequence"):
    """Row softmax = Sinkhorn with T = 1 at eps = 1; duals u_i = log(1/n_q) − LSE_j S_ij, v = 0."""
    return sinkhorn_attention(q, k, val, budget=1, eps=1.0, mask=mask, mask_mode=mask_mode)


def parse_operator(text: str):
    """'sinkhorn:T=10,eps=0.5' → (family, params) with the documented defaults (T=10, eps=1, subsequence)."""
    family, _, rest = text.partition(":")
    params = {"mask_mode": "subsequence"}
    if family == "sinkhorn":
        params.update(T=10, eps=1.0)
    elif family != "softmax":
        raise ValueError(f"the reference implements softmax and sinkhorn, not {family!r}")
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key not in params:
            raise ValueError(f"unknown {family} parameter {key!r}")
        params[key] = type(params[key])(value) if key != "T" else int(float(value))
    return family, params


def run_operator(family: str, params: dict, q, k, val=None, mask=None) -> AttentionResult:
    if family == "softmax":
        return softmax_attention(q, k, val, mask=mask, mask_mode=params["mask_mode"])
    return sinkhorn_attention(q, k, val, budget=params["T"], eps=params["eps"], mask=mask,
                              mask_mode=params["mask_mode"])
