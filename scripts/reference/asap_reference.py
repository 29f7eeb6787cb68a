"""Independent PyTorch reference for the ASAP online operator (compiled Sinkhorn layer).

Written independently from the papers' mathematics, never from the C++ sources, so the fixtures it produces
are a real cross-check of core/ops/asap/asap.cpp and sliced_potentials.cpp. What it computes is documented in
docs/operators/asap.md and docs/conventions.md.

  projections  x = Q θᵀ / d^{1/4}, y = K θᵀ / d^{1/4} (docs/operators/asap.md#features); 1-D cost ½(x − y)²
  potential    f(z) = ½z² − φ(z), φ convex piecewise linear: φ(x_(1)) = 0, slope y_(i) on [x_(i), x_(i+1)]
               (y_(⌈i·n_k/n_q⌉) when n_q ≠ n_k, the tool's extension), outer rays of slope y_(1) and y_(n_k)
  features     Φ[:, l] = f^{θ_l} − mean over active queries (docs/operators/asap.md#features); padded queries
               (keep-queries) get the convex extension f(x) at their projection (docs/operators/asap.md#masks)
  source dual  u0 = Φβ − a, a_i = ‖q_i‖²/(2√d) (docs/operators/asap.md#closures), or a given `dual` in score
               coordinates
  closures     key:    v_j = eps·log ν_j − eps·LSE_i((S_ij + u_i)/eps)   (ν_j = 0 on padded keys: v_j = −∞)
               source: u_i = eps·log μ_i − eps·LSE_j((S_ij + v_j)/eps)   (μ_i = 1/n_q for every query)
  variants     asap0: P(u0, key(u0)); two-sided column: v1, u1, v2 → P(u1, v2); row: v1, u1 → P(u1, v1)
  scales       A = n_q·P, O = A V; mask_mode subsequence (drop padded tokens) or keep-queries
               (docs/conventions.md#masks)
"""
import math
from dataclasses import dataclass
from typing import Optional

import torch

import attention_reference as ref

NEG_INF = float("-inf")


@dataclass
class AsapResult:
    plan: torch.Tensor              # A = n_q·P
    output: Optional[torch.Tensor]  # A V
    u: torch.Tensor                 # final source dual (score coordinates), −inf on dropped tokens
    v: torch.Tensor                 # final key dual, −inf on padded keys
    u0: torch.Tensor                # predicted (or given) source dual before any closure
    features: Optional[torch.Tensor]  # Φ (n_q × L) when slices + beta were given


def _slope_keys(y_sorted: torch.Tensor, n_x: int) -> torch.Tensor:
    """Slope of φ on [x_(i), x_(i+1)], i = 1..n_x−1: the key matched to the i-th query."""
    n_y = y_sorted.shape[0]
    i = torch.arange(1, n_x)
    return y_sorted[torch.clamp((i * n_y + n_x - 1) // n_x, 1, n_y) - 1]  # y_(⌈i·n_y/n_x⌉), 1-based


def convex_phi(x: torch.Tensor, y: torch.Tensor):
    """Knots x_(i) ascending, φ at the knots and the slopes of the pieces (left ray, n−1 segments, right ray)."""
    x_sorted = torch.sort(x, stable=True).values
    y_sorted = torch.sort(y, stable=True).values
    slopes = _slope_keys(y_sorted, x.shape[0])
    phi_knots = torch.cat([x.new_zeros(1), torch.cumsum(slopes * (x_sorted[1:] - x_sorted[:-1]), 0)])
    return x_sorted, y_sorted, slopes, phi_knots


def potential_1d(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Eq 12: f at each x, in x's own order (ties in x give equal f; the knots are where φ is known)."""
    order = torch.sort(x, stable=True).indices
    x_sorted, _, _, phi_knots = convex_phi(x, y)
    f = torch.empty_like(x)
    f[order] = 0.5 * x_sorted ** 2 - phi_knots
    return f


def potential_extension(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """f(z) = ½z² − φ(z) with φ convex piecewise linear = the maximum of its affine pieces."""
    x_sorted, y_sorted, slopes, phi_knots = convex_phi(x, y)
    # Pieces through (knot, φ(knot)): left ray, segments i = 1..n−1, right ray.
    knots = torch.cat([x_sorted[:1], x_sorted[:-1], x_sorted[-1:]])
    values = torch.cat([phi_knots[:1], phi_knots[:-1], phi_knots[-1:]])
    piece_slopes = torch.cat([y_sorted[:1], slopes, y_sorted[-1:]])
    phi = (values[None, :] + piece_slopes[None, :] * (z[:, None] - knots[None, :])).max(dim=1).values
    return 0.5 * z ** 2 - phi


def sliced_features(q, k, slices, active=None) -> torch.Tensor:
    """Φ: one centred 1-D potential per slice; active queries against active keys (docs/operators/asap.md#features)."""
    scale = q.shape[1] ** -0.25  # d^{-1/4} projections
    xs, ys = q @ slices.T * scale, k @ slices.T * scale
    if active is None:
        active = torch.ones(q.shape[0], dtype=torch.bool)
    key_active = active if k.shape[0] == q.shape[0] else torch.ones(k.shape[0], dtype=torch.bool)
    phi = torch.empty(q.shape[0], slices.shape[0], dtype=q.dtype)
    for l in range(slices.shape[0]):
        x, y = xs[active, l], ys[key_active, l]
        f = potential_1d(x, y)
        mean = f.mean()
        phi[active, l] = f - mean
        if not active.all():
            phi[~active, l] = potential_extension(x, y, xs[~active, l]) - mean
    return phi


def key_closure(s, u, log_nu, eps):
    v = eps * log_nu - eps * ref.safe_logsumexp((s + u[:, None]) / eps, dim=0)
    # padded keys get v = −∞ (docs/operators/asap.md#masks)
    return torch.where(torch.isfinite(log_nu), v, torch.full_like(v, NEG_INF))


def source_closure(s, v, log_mu, eps):
    return eps * log_mu - eps * ref.safe_logsumexp((s + v[None, :]) / eps, dim=1)


def _asap_dense(q, k, val, p, key_active, dual):
    """One head, every query kept (μ = 1/n_q), keys with ν = 1/n_k or 0 where padded (docs/operators/asap.md#masks)."""
    n_q, n_k = q.shape[0], k.shape[0]
    s = ref.scores(q, k)
    log_mu = torch.full((n_q,), -math.log(n_q), dtype=q.dtype)
    log_nu = torch.full((n_k,), -math.log(n_k), dtype=q.dtype)
    if key_active is not None:
        log_nu = torch.where(key_active, log_nu, torch.full_like(log_nu, NEG_INF))
    features = None
    if dual is not None:
        u0 = dual
    else:
        features = sliced_features(q, k, p["slices"], key_active)
        a = (q ** 2).sum(1) / (2 * math.sqrt(q.shape[1]))
        # docs/operators/asap.md#closures: the cost-unit prediction shifted to score coordinates
        u0 = features @ p["beta"] - a
    eps = p["eps"]
    u, v = u0, key_closure(s, u0, log_nu, eps)
    if p["variant"] == "two-sided":  # col, row (, col)
        u = source_closure(s, v, log_mu, eps)
        if p["closing"] == "column":
            v = key_closure(s, u, log_nu, eps)
    plan = n_q * ref.transport_plan(s, u, v, eps)
    return AsapResult(plan, plan @ val if val is not None else None, u, v, u0, features)


def _scatter(sub: torch.Tensor, idx, n, fill):
    out = torch.full((n,) + tuple(sub.shape[1:]), fill, dtype=sub.dtype)
    out[idx] = sub
    return out


def asap_attention(q, k, val=None, *, mask=None, **p) -> AsapResult:
    """p: variant, closing, eps, mask_mode and either slices (L×d) + beta (L) or dual (n, score coordinates)."""
    if p["variant"] == "asap0" and p["closing"] == "row":
        raise ValueError("asap0 always ends on the key side")
    dual = p.get("dual")
    if mask is None or p["mask_mode"] == "keep-queries":
        return _asap_dense(q, k, val, p, mask, dual)
    # subsequence: the operator acts on the valid tokens only (docs/conventions.md#masks).
    idx = torch.nonzero(mask).squeeze(1)
    n = mask.shape[0]
    sub = _asap_dense(q[idx], k[idx], val[idx] if val is not None else None, p, None,
                      dual[idx] if dual is not None else None)
    plan = torch.zeros((n, n), dtype=q.dtype)
    plan[idx[:, None], idx[None, :]] = sub.plan
    output = _scatter(sub.output, idx, n, 0.0) if val is not None else None
    features = _scatter(sub.features, idx, n, 0.0) if sub.features is not None else None
    return AsapResult(plan, output, _scatter(sub.u, idx, n, NEG_INF), _scatter(sub.v, idx, n, NEG_INF),
                      _scatter(sub.u0, idx, n, NEG_INF), features)


def parse_asap(text: str) -> dict:
    """'asap:variant=asap0,eps=0.5' → parameters with the registry's defaults (files are passed separately)."""
    family, _, rest = text.partition(":")
    if family != "asap":
        raise ValueError(f"not an asap operator: {text!r}")
    params = {"variant": "two-sided", "closing": "column", "eps": 1.0, "mask_mode": "subsequence"}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key in ("slices", "beta", "dual", "layer"):  # files, and the compiled layer they came from
            continue
        # This reference implements the sliced-potential features only; the other families of
        # docs/operators/asap.md#feature-families are checked by the C++ tests against hand-built values.
        if key == "features":
            if value != "potentials":
                raise ValueError(f"the PyTorch ASAP reference has only the sliced-potential features, not {value!r}")
            continue
        if key not in params:
            raise ValueError(f"unknown asap parameter {key!r}")
        params[key] = float(value) if key == "eps" else value
    return params
