"""Independent PyTorch reference for ESP attention (ESPFormer) in float64.

Written independently from the papers' mathematics, never from the C++ sources, so the fixtures it produces
are a real cross-check of core/ops/esp/. What it computes is documented in docs/operators/esp.md.

Everything is dense and literal: per slice θ_l the sorting matrices R^Q (n_q×n_q) and R^K (n_k×n_k), with
row r = rank r and column i = token i, the rank coupling Λ (n_q×n_k, plan scale), and the lifted plan
U_l = R^Qᵀ Λ R^K. Then C_ij = ‖q_i − k_j‖^p, D_l = <C, U_l>, w = softmax(−tau·D), A = n_q·Σ_l w_l U_l and
O = A V.

  sort=hard, ties=break : R is the permutation of a stable ascending sort by (value, token index)
  sort=hard, ties=split : eq. 5; R[r, i] = 1/|g(i)| for the ranks r that i's tie group occupies
  sort=soft             : SoftSort, R[r, j] = softmax_j(−(v_[r] − v_j)²/t) with descending anchors v_[r]
  rank_coupling         : nw-corner Λ[r,s] = |[r/n_q,(r+1)/n_q) ∩ [s/n_k,(s+1)/n_k)|, or the paper's hat
                          matrix max(0, 1 − |r(n_k−1)/(n_q−1) − s|)/n_q (docs/operators/esp.md#unequal-sizes);
                          both I/n when n_q = n_k
  compat=reference-code : p = 1 on q, k scaled by d^{-1/2} (docs/operators/esp.md#compat)
  mask_mode=subsequence : run on the valid tokens, embed with zero rows/columns (docs/operators/esp.md#masks)

Also returned: the break-rule matching per slice (for each query, the key whose rank gets most of its rank's
mass, first on ties; -1 at padded queries), tied tokens per slice, and in soft mode max|A_soft − A_hard|.
"""
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

import torch


@dataclass
class EspResult:
    plan: torch.Tensor            # A = n_q·G, rows = queries
    output: Optional[torch.Tensor]
    weights: torch.Tensor         # w_l
    costs: torch.Tensor           # D_l
    matchings: torch.Tensor       # [L, n_q] int64, -1 at padded queries
    ties: torch.Tensor            # [L] tied tokens (queries + keys) per slice
    hard_distance: Optional[torch.Tensor]  # soft only


def stable_order(values: torch.Tensor) -> torch.Tensor:
    return torch.sort(values, stable=True).indices


def hard_sorting_matrix(values: torch.Tensor, split: bool) -> torch.Tensor:
    n = values.shape[0]
    r_mat = torch.zeros(n, n, dtype=torch.float64)
    if not split:
        r_mat[torch.arange(n), stable_order(values)] = 1.0
        return r_mat
    for i in range(n):
        below = int((values < values[i]).sum())
        equal = int((values == values[i]).sum())
        r_mat[below:below + equal, i] = 1.0 / equal
    return r_mat


def soft_sorting_matrix(values: torch.Tensor, temp: float) -> torch.Tensor:
    """Descending anchors, as in the public code. Both sides flip together and both rank couplings are
    centrosymmetric (Λ[n_q−1−r, n_k−1−s] = Λ[r, s]), so the plan equals the ascending one
    (docs/operators/esp.md#resolutions)."""
    anchors = torch.sort(values, descending=True).values
    return torch.softmax(-(anchors[:, None] - values[None, :]) ** 2 / temp, dim=1)


def rank_coupling_fractions(n_q: int, n_k: int, kind: str):
    """Λ as exact fractions (plan scale)."""
    lam = [[Fraction(0)] * n_k for _ in range(n_q)]
    for r in range(n_q):
        for s in range(n_k):
            if kind == "nw-corner":
                lo = max(Fraction(r, n_q), Fraction(s, n_k))
                hi = min(Fraction(r + 1, n_q), Fraction(s + 1, n_k))
                lam[r][s] = max(Fraction(0), hi - lo)
            elif kind == "interpolation":
                x = Fraction(0) if n_q == 1 else Fraction(r * (n_k - 1), n_q - 1)
                lam[r][s] = max(Fraction(0), 1 - abs(x - s)) / n_q
            else:
                raise ValueError(f"unknown rank_coupling {kind!r}")
    return lam


def tied_tokens(values: torch.Tensor) -> int:
    counts = (values[:, None] == values[None, :]).sum(dim=1)
    return int((counts > 1).sum())


def slice_directions(d: int, slicer: str, slices: Optional[torch.Tensor]) -> torch.Tensor:
    if slicer == "axis":
        return torch.eye(d, dtype=torch.float64)
    if slicer == "file":
        assert slices is not None and slices.shape[1] == d
        return slices
    raise ValueError(f"slicer {slicer!r} is not reproduced here (random slices come from C++'s SeededRandom)")


def _esp_valid(q, k, val, p):
    n_q, n_k, d = q.shape[0], k.shape[0], q.shape[1]
    exponent = p["p"]
    if p["compat"] == "reference-code":
        q, k, exponent = q / d ** 0.5, k / d ** 0.5, 1.0
    theta = slice_directions(d, p["slicer"], p.get("slices_array"))
    lam_frac = rank_coupling_fractions(n_q, n_k, p["rank_coupling"])
    lam = torch.tensor([[float(x) for x in row] for row in lam_frac], dtype=torch.float64)
    cost = torch.cdist(q, k) ** exponent if exponent != 2 else ((q[:, None, :] - k[None, :, :]) ** 2).sum(-1)
    split = p["ties"] == "split"

    def lifted(rq, rk):
        return rq.T @ lam @ rk

    hard_plans, soft_plans, matchings, ties = [], [], [], []
    for th in theta:
        sq, sk = q @ th, k @ th
        hard_plans.append(lifted(hard_sorting_matrix(sq, split), hard_sorting_matrix(sk, split)))
        if p["sort"] == "soft":
            soft_plans.append(lifted(soft_sorting_matrix(sq, p["sort_temp"]), soft_sorting_matrix(sk, p["sort_temp"])))
        order_q, order_k = stable_order(sq), stable_order(sk)
        match = torch.full((n_q,), -1, dtype=torch.int64)
        for r in range(n_q):
            row = lam_frac[r]
            best = max(range(n_k), key=lambda s: (row[s], -s))  # largest mass, first key rank on ties
            match[order_q[r]] = order_k[best]
        matchings.append(match)
        ties.append(tied_tokens(sq) + tied_tokens(sk))

    def combine(plans):
        costs = torch.stack([(cost * u).sum() for u in plans])
        weights = torch.softmax(-p["tau"] * costs, dim=0)
        return n_q * sum(w * u for w, u in zip(weights, plans)), costs, weights

    hard_plan, costs, weights = combine(hard_plans)
    plan, hard_distance = hard_plan, None
    if p["sort"] == "soft":
        plan, costs, weights = combine(soft_plans)
        hard_distance = (plan - hard_plan).abs().max()
    return EspResult(plan, plan @ val if val is not None else None, weights, costs,
                     torch.stack(matchings), torch.tensor(ties, dtype=torch.float64), hard_distance)


def esp_attention(q, k, val=None, *, mask=None, **params) -> EspResult:
    """params: tau, p, sort, sort_temp, ties, slicer, slices_array, rank_coupling, compat (see parse_esp)."""
    p = dict(DEFAULTS, **params)
    if mask is None or bool(mask.all()):
        return _esp_valid(q, k, val, p)
    idx = torch.nonzero(mask).squeeze(1)
    sub = _esp_valid(q[idx], k[idx], val[idx] if val is not None else None, p)
    n = mask.shape[0]
    plan = torch.zeros(n, n, dtype=torch.float64)
    plan[idx[:, None], idx[None, :]] = sub.plan
    output = None
    if sub.output is not None:
        output = torch.zeros(n, sub.output.shape[1], dtype=torch.float64)
        output[idx] = sub.output
    matchings = torch.full((sub.matchings.shape[0], n), -1, dtype=torch.int64)
    matchings[:, idx] = idx[sub.matchings]
    return EspResult(plan, output, sub.weights, sub.costs, matchings, sub.ties, sub.hard_distance)


DEFAULTS = {"tau": 0.1, "p": 2.0, "sort": "hard", "sort_temp": 1e-3, "ties": "split", "slicer": "axis",
            "rank_coupling": "nw-corner", "compat": "paper"}


def parse_esp(text: str) -> dict:
    """'esp:tau=1,sort=soft' → parameters (the glossary names of docs/conventions.md#glossary)."""
    family, _, rest = text.partition(":")
    assert family == "esp", text
    params = {}
    for item in filter(None, rest.split(",")):
        key, value = item.split("=", 1)
        params[key] = float(value) if key in ("tau", "p", "sort_temp") else value
    return params
