"""Independent PyTorch reference for banded (block-wise) Sinkhorn attention, forward pass.

Written independently from the paper's mathematics, never from the C++ sources, so the fixtures it produces
are a real cross-check of core/ops/banded/banded.cpp. What it computes is documented in
docs/operators/banded.md and docs/conventions.md.

  support     Ω = {(i, j): |i − j| ≤ W} on raw indices of the (valid) sequence
              (docs/operators/banded.md#definition); rows/columns without a support entry are inactive: zero
              mass, potential −∞ here (docs/conventions.md#duals)
  half-steps  unit targets in the eps-scaled internal gauge: u_i = −LSE_j(X_ij + v_j),
              v_j = −LSE_i(X_ij + u_i) over Ω, X = QKᵀ/(√d·eps); plan exp(X + u ⊕ v) is already attention scale
  schedule    v = 0; base_steps full steps (row then column) each followed by centring u −= m, v += m with
              m = mean of active u, cumulative gauge c += m; then tail_steps raw full steps
  duals       written in score coordinates (docs/conventions.md#duals): u = eps·(u_b + c − log n_q),
              v = eps·(v_b − c), i.e. the uncentred iteration with μ = 1/n_q, so a full band equals dense
              Sinkhorn with T = 2·steps
  dustbin     docs/operators/banded.md#dustbin: one zero token per side appended (q = k = v = 0), unit mass,
              support dense on the augmented system (W~ covers everything); results reported for the real
              tokens, plus the mass each real row sends to the dustbin key and each real column receives from
              the dustbin query
  mask        mask_mode = subsequence: the operator acts on the valid sub-sequence (docs/conventions.md#masks)
  tile errors max |row (column) sum − target| of the final plan per block of `tile` consecutive tokens of
              the system that was solved (valid tokens, dustbin included)
"""
import math
from dataclasses import dataclass
from typing import Optional

import torch

NEG_INF = float("-inf")


@dataclass
class BandedResult:
    plan: torch.Tensor                # A (attention scale), real tokens
    output: Optional[torch.Tensor]    # A V
    u: torch.Tensor                   # score coordinates, −inf on inactive or padded tokens
    v: torch.Tensor
    tile_row_errors: torch.Tensor
    tile_col_errors: torch.Tensor
    dustbin_query_mass: Optional[torch.Tensor]  # A[i, dustbin key] for real rows i
    dustbin_key_mass: Optional[torch.Tensor]    # A[dustbin query, j] for real columns j


def lse(x: torch.Tensor, dim: int) -> torch.Tensor:
    """log Σ exp along `dim`; an empty (all −inf) slice gives −inf, never NaN (docs/conventions.md#log-domain)."""
    m = x.max(dim=dim, keepdim=True).values
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    return (m + torch.log(torch.exp(x - m).sum(dim=dim, keepdim=True))).squeeze(dim)


def row_half(x, v, active_rows):
    return torch.where(active_rows, -lse(x + v[None, :], 1), torch.tensor(NEG_INF, dtype=x.dtype))


def col_half(x, u, active_cols):
    return torch.where(active_cols, -lse(x + u[:, None], 0), torch.tensor(NEG_INF, dtype=x.dtype))


def per_tile_max(err: torch.Tensor, tile: int) -> torch.Tensor:
    return torch.stack([chunk.max() for chunk in torch.split(err, tile)])


def _banded_valid(q, k, val, p) -> BandedResult:
    n_q0, n_k0 = q.shape[0], k.shape[0]
    if p["dustbin"]:  # a neutral dustbin token per side
        q = torch.cat([q, q.new_zeros(1, q.shape[1])])
        k = torch.cat([k, k.new_zeros(1, k.shape[1])])
        val = torch.cat([val, val.new_zeros(1, val.shape[1])]) if val is not None else None
    n_q, n_k = q.shape[0], k.shape[0]
    i, j = torch.arange(n_q)[:, None], torch.arange(n_k)[None, :]
    support = torch.ones(n_q, n_k, dtype=torch.bool) if p["dustbin"] else (i - j).abs() <= p["W"]
    x = torch.where(support, q @ k.T / (math.sqrt(q.shape[1]) * p["eps"]), torch.tensor(NEG_INF, dtype=q.dtype))
    active_rows, active_cols = support.any(1), support.any(0)

    u = torch.where(active_rows, 0.0, NEG_INF).to(q.dtype)
    v = torch.where(active_cols, 0.0, NEG_INF).to(q.dtype)
    c = 0.0
    for _ in range(p["base_steps"]):  # stopped base, centred after every full step
        u = row_half(x, v, active_rows)
        v = col_half(x, u, active_cols)
        m = u[active_rows].mean()
        u, v, c = u - m, v + m, c + m
    for _ in range(p["tail_steps"]):  # raw tail
        u = row_half(x, v, active_rows)
        v = col_half(x, u, active_cols)

    plan = torch.exp(x + u[:, None] + v[None, :])
    row_err = (plan.sum(1) - active_rows.to(q.dtype)).abs()
    col_err = (plan.sum(0) - active_cols.to(q.dtype)).abs()
    u_score = p["eps"] * (u + c - math.log(n_q))
    v_score = p["eps"] * (v - c)
    dustbin_q = plan[:n_q0, n_k0] if p["dustbin"] else None
    dustbin_k = plan[n_q0, :n_k0] if p["dustbin"] else None
    output = (plan @ val)[:n_q0] if val is not None else None
    return BandedResult(plan[:n_q0, :n_k0], output, u_score[:n_q0], v_score[:n_k0],
                        per_tile_max(row_err, p["tile"]), per_tile_max(col_err, p["tile"]), dustbin_q, dustbin_k)


def banded_attention(q, k, val=None, *, mask=None, **p) -> BandedResult:
    """p: W, base_steps, tail_steps, tile, eps, dustbin."""
    if p["base_steps"] + p["tail_steps"] < 1:
        raise ValueError("banded needs at least one full step")
    if mask is None:
        return _banded_valid(q, k, val, p)
    idx = torch.nonzero(mask).squeeze(1)
    n = mask.shape[0]
    sub = _banded_valid(q[idx], k[idx], val[idx] if val is not None else None, p)

    def scatter(x, fill):
        out = torch.full((n,) + tuple(x.shape[1:]), fill, dtype=x.dtype)
        out[idx] = x
        return out

    plan = torch.zeros((n, n), dtype=q.dtype)
    plan[idx[:, None], idx[None, :]] = sub.plan
    return BandedResult(plan, scatter(sub.output, 0.0) if val is not None else None, scatter(sub.u, NEG_INF),
                        scatter(sub.v, NEG_INF), sub.tile_row_errors, sub.tile_col_errors,
                        None if sub.dustbin_query_mass is None else scatter(sub.dustbin_query_mass, 0.0),
                        None if sub.dustbin_key_mass is None else scatter(sub.dustbin_key_mass, 0.0))


def parse_banded(text: str) -> dict:
    """'banded:W=4,base_steps=3' → parameters with the glossary defaults."""
    family, _, rest = text.partition(":")
    if family != "banded":
        raise ValueError(f"not a banded operator: {text!r}")
    params = {"W": 16, "base_steps": 15, "tail_steps": 2, "tile": 64, "eps": 1.0, "dustbin": False,
              "mask_mode": "subsequence"}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key not in params:
            raise ValueError(f"unknown banded parameter {key!r}")
        if key == "dustbin":
            params[key] = value in ("1", "true", "on", "yes")
        elif key == "mask_mode":
            params[key] = value
        else:
            params[key] = float(value) if key == "eps" else int(float(value))
    return params
