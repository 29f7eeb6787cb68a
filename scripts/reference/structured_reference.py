"""PyTorch formulations that use the structure of a plan instead of forming it: O = A·V for the families with
a lazy path (ESP hard, LOT, banded Sinkhorn), and the ESP hard plan assembled from its permutations.

Written independently from the papers' mathematics (documented in the #lazy-path sections
of docs/operators/esp.md, lot.md and banded.md), never from the C++; used by bench_reference.py so that
the timings at large n compare like with like. The literal dense references (esp_reference.py,
lot_reference.py, banded_reference.py) stay the ones the fixtures come from; parameters and shared pieces are
imported from them.

  esp hard   per slice: stable ascending sorts of Qθ and Kθ, rank r matches rank r (π_l), D_l = mean_i
             ‖q_i − k_{π_l(i)}‖^p, w = softmax(−tau·D), O_i = Σ_l w_l V_{π_l(i)}: O(L·n log n + L·n·d) (n_q = n_k,
             no ties; Gaussian inputs have none)
  lot        duals of the two entropic problems on S1 = QZᵀ/√d (n×r) and S2 = ZKᵀ/√d (r×n), then
             O = n_q·P1 (diag(1/w) (P2 V)): O(n·r·d), never n×n
  banded     band scores stored by diagonal offset o ∈ [−W, W] (X_band[i, o] = X[i, i+o]), centred base and
             raw tail half-steps as log-sum-exp over the band, O_i = Σ_o exp(X_band + u_i + v_{i+o}) V_{i+o}:
             O(n·W·d) time and O(n·W) memory (square, no dustbin)
"""
import math

import torch

import banded_reference
import esp_reference
import lot_reference

NEG_INF = float("-inf")


def esp_hard_matchings(q, k, p):
    """π (L × n, key matched to each query), slice weights w (L)."""
    if q.shape[0] != k.shape[0] or p["sort"] != "hard" or p["compat"] != "paper":
        raise ValueError("the structured ESP formulation covers sort=hard, compat=paper, n_q = n_k")
    theta = esp_reference.slice_directions(q.shape[1], p["slicer"], p.get("slices_array")).to(q.dtype)
    order_q = torch.sort(q @ theta.T, dim=0, stable=True).indices  # n × L, rank → query
    order_k = torch.sort(k @ theta.T, dim=0, stable=True).indices
    match = torch.empty_like(order_q)
    match.scatter_(0, order_q, order_k)  # π_l(order_q[r, l]) = order_k[r, l]
    match = match.T
    costs = torch.stack([((q - k[m]).norm(dim=1) ** p["p"]).mean() for m in match])
    return match, torch.softmax(-p["tau"] * costs, dim=0)


def esp_hard_output(q, k, val, p):
    match, w = esp_hard_matchings(q, k, p)
    return sum(wl * val[m] for wl, m in zip(w, match))


def esp_hard_plan(q, k, val, p):
    """A = Σ_l w_l P_l assembled from the permutations (O(L·n + n²)), and A V."""
    match, w = esp_hard_matchings(q, k, p)
    n = q.shape[0]
    plan = torch.zeros(n, n, dtype=q.dtype)
    rows = torch.arange(n).repeat(match.shape[0])
    plan.index_put_((rows, match.reshape(-1)), w.repeat_interleave(n), accumulate=True)
    return plan, plan @ val


def lot_output(q, k, val, pivots, mass_logits, eps, budget, mass_temp):
    n_q, n_k, d = q.shape[0], k.shape[0], q.shape[1]
    log_w = torch.log_softmax(mass_logits / mass_temp, dim=0)
    s1 = (q / math.sqrt(d)) @ pivots.T
    s2 = pivots @ (k / math.sqrt(d)).T
    u1, v1 = lot_reference.entropic_duals(s1, torch.full((n_q,), -math.log(n_q), dtype=q.dtype), log_w, eps, budget)
    u2, v2 = lot_reference.entropic_duals(s2, log_w, torch.full((n_k,), -math.log(n_k), dtype=q.dtype), eps, budget)
    p1 = lot_reference.entropic_plan(s1, u1, v1, eps)
    p2 = lot_reference.entropic_plan(s2, u2, v2, eps)
    return n_q * p1 @ (torch.exp(-log_w)[:, None] * (p2 @ val))


def banded_output(q, k, val, p):
    if q.shape[0] != k.shape[0] or p["dustbin"]:
        raise ValueError("the structured banded formulation covers square inputs without a dustbin")
    n, W = q.shape[0], p["W"]
    offsets = torch.arange(-W, W + 1)
    cols = torch.arange(n)[:, None] + offsets[None, :]           # n × (2W+1): key index of each band slot
    inside = (cols >= 0) & (cols < n)
    cols = cols.clamp(0, n - 1)
    x = torch.stack([(q * k[cols[:, o]]).sum(1) for o in range(2 * W + 1)], 1) / (math.sqrt(q.shape[1]) * p["eps"])
    x = torch.where(inside, x, torch.tensor(NEG_INF, dtype=q.dtype))
    rows_of_col = torch.arange(n)[:, None] - offsets[None, :]    # column j, slot o ↔ row j − o
    col_inside = (rows_of_col >= 0) & (rows_of_col < n)
    rows_of_col = rows_of_col.clamp(0, n - 1)
    x_col = torch.where(col_inside, x[rows_of_col, torch.arange(2 * W + 1)[None, :]],
                        torch.tensor(NEG_INF, dtype=q.dtype))  # x_col[j, o] = X[j − o, j]

    def row_half(v):
        return -banded_reference.lse(x + v[cols], 1)

    def col_half(u):
        return -banded_reference.lse(x_col + u[rows_of_col], 1)

    v = torch.zeros(n, dtype=q.dtype)
    for _ in range(p["base_steps"]):
        u = row_half(v)
        v = col_half(u)
        m = u.mean()
        u, v = u - m, v + m
    for _ in range(p["tail_steps"]):
        u = row_half(v)
        v = col_half(u)
    weights = torch.exp(x + u[:, None] + v[cols])
    return sum(weights[:, o, None] * val[cols[:, o]] for o in range(2 * W + 1))
