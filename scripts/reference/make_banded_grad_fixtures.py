#!/usr/bin/python3
"""Writes the banded-Sinkhorn gradient fixtures (float64) to tests/fixtures/banded_grad/.

    /usr/bin/python3 scripts/reference/make_banded_grad_fixtures.py [--out tests/fixtures/banded_grad]

The gradients come from PyTorch autograd of the surrogate of docs/operators/banded.md#gradients, written
from its definition (never from the C++): the centred base runs under torch.no_grad() (a stopped constant),
the raw tail of `tail_steps` full steps is recorded, O = exp(X + u ⊕ v)·V on the support, and the loss is
L = Σ G_ij·O_ij. The same loop with nothing stopped (centring included) gives full backpropagation.

Each case folder holds q, k, v, g (the cotangent, n_q × d_v), optional mask (bool), and
  dq, dk, dv            the surrogate's gradients
  full_dq, full_dk, full_dv   full backpropagation through all base_steps + tail_steps steps
cases.json lists every case with its operator string and the float32 scales of oracle 4
(docs/operators/banded.md#checks): m_q = max_i Σ_j |S̄_ij|·|K_j|·c_s, m_k = max_j Σ_i |S̄_ij|·|Q_i|·c_s (the
uncancelled magnitudes of dQ and dK, |·| the Euclidean norm, S̄ = ∂L/∂X) and m_v = max_j Σ_i A_ij·|G_i|.

Before writing, every case is checked: the finite-difference gradient of the stopped-base loss matches
autograd (h = 1e-6; small cases only), and for tail_steps ≥ 1 every row of S̄ sums to zero.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import banded_reference as band  # noqa: E402
import fixture_io as fx  # noqa: E402

# name, n_q, n_k, d, d_v, W, base_steps, tail_steps, eps, dustbin, padded positions or None
CASES = [
    ("square_W3_R0", 14, 14, 4, 3, 3, 6, 0, 1.0, False, None),
    ("square_W3_R1", 14, 14, 4, 3, 3, 6, 1, 1.0, False, None),
    ("square_W3_R2", 14, 14, 4, 3, 3, 6, 2, 1.0, False, None),
    ("square_W3_R3", 14, 14, 4, 3, 3, 6, 3, 0.7, False, None),
    ("square_W3_R4", 14, 14, 4, 3, 3, 6, 4, 1.0, False, None),
    ("dense_n12_R2", 12, 12, 4, 3, 11, 15, 2, 1.0, False, None),
    ("dense_n12_R4_eps05", 12, 12, 4, 3, 11, 5, 4, 0.5, False, None),
    ("rect_9x14_W2_R2", 9, 14, 4, 3, 2, 8, 2, 1.0, False, None),
    ("rect_16x10_W3_R1", 16, 10, 4, 3, 3, 8, 1, 1.0, False, None),
    ("rect_16x10_W3_R2", 16, 10, 4, 3, 3, 8, 2, 1.0, False, None),
    ("masked_n15_W2_R2", 15, 15, 4, 3, 2, 6, 2, 1.0, False, [0, 6, 7, 14]),
    ("masked_n15_W2_R3", 15, 15, 4, 3, 2, 6, 3, 1.0, False, [2, 3]),
    ("dustbin_n10_W2_R2", 10, 10, 4, 3, 2, 10, 2, 1.0, True, None),
    ("dustbin_rect_7x9_W1_R1", 7, 9, 4, 3, 1, 8, 1, 0.8, True, None),
    ("dustbin_masked_n12_W2_R2", 12, 12, 4, 3, 2, 6, 2, 1.0, True, [4, 11]),
    ("base0_n10_W2_R3", 10, 10, 4, 3, 2, 0, 3, 1.0, False, None),
]


def surrogate_loss(q, k, val, g, p, full):
    """L = Σ G ⊙ O on the solved system (valid tokens, dustbin appended), and S̄ = ∂L/∂X, A for the scales.
    Rows/columns without any support entry carry no mass and are left out of the loop (their output and
    gradient rows are zero), which keeps autograd away from log(0)."""
    n_q0, n_k0 = q.shape[0], k.shape[0]
    if p["dustbin"]:  # one zero token per side, a constant: its own gradient is not part of the result
        q = torch.cat([q, q.new_zeros(1, q.shape[1])])
        k = torch.cat([k, k.new_zeros(1, k.shape[1])])
        val = torch.cat([val, val.new_zeros(1, val.shape[1])])
        g = torch.cat([g, g.new_zeros(1, g.shape[1])])  # the dustbin query's output is not in the loss
    n_q, n_k = q.shape[0], k.shape[0]
    i, j = torch.arange(n_q)[:, None], torch.arange(n_k)[None, :]
    support = torch.ones(n_q, n_k, dtype=torch.bool) if p["dustbin"] else (i - j).abs() <= p["W"]
    rows, cols = support.any(1), support.any(0)
    x_all = q @ k.T / (math.sqrt(q.shape[1]) * p["eps"])
    x_all.retain_grad()
    x = torch.where(support, x_all, torch.tensor(float("-inf")))[rows][:, cols]
    everything = torch.ones(x.shape[0], dtype=torch.bool), torch.ones(x.shape[1], dtype=torch.bool)

    def full_step(v):
        u = band.row_half(x, v, everything[0])
        return u, band.col_half(x, u, everything[1])

    v = x.new_zeros(x.shape[1])
    u = x.new_zeros(x.shape[0])
    with torch.set_grad_enabled(full):  # the stopped base, centred after every full step
        for _ in range(p["base_steps"]):
            u, v = full_step(v)
            m = u.mean()
            u, v = u - m, v + m
    if not full:
        u, v = u.detach(), v.detach()
    for _ in range(p["tail_steps"]):  # the raw tail
        u, v = full_step(v)
    plan = torch.exp(x + u[:, None] + v[None, :])
    out = plan @ val[cols]
    loss = (g[rows] * out).sum()
    loss.backward()
    sbar = torch.zeros(n_q, n_k)
    sbar[torch.nonzero(rows).squeeze(1)[:, None], torch.nonzero(cols).squeeze(1)[None, :]] = \
        torch.where(support[rows][:, cols], x_all.grad[rows][:, cols], torch.tensor(0.0))
    A = torch.zeros(n_q, n_k)
    A[torch.nonzero(rows).squeeze(1)[:, None], torch.nonzero(cols).squeeze(1)[None, :]] = plan.detach()
    return loss.detach(), sbar, A, q.detach(), k.detach(), g.detach()


def valid_indices(n, mask):
    return torch.arange(n) if mask is None else torch.nonzero(mask).squeeze(1)


def gradients(q0, k0, v0, g0, p, full, mask):
    """(dq, dk, dv, scales) for the caller's tokens (zero rows on padding)."""
    iq, ik = valid_indices(q0.shape[0], mask), valid_indices(k0.shape[0], mask)
    q, k, val = q0[iq].clone().requires_grad_(True), k0[ik].clone().requires_grad_(True), \
        v0[ik].clone().requires_grad_(True)
    _, sbar, A, qs, ks, gs = surrogate_loss(q, k, val, g0[iq], p, full)
    cs = 1 / (math.sqrt(q0.shape[1]) * p["eps"])
    scales = {"m_q": float(((sbar.abs() @ ks.norm(dim=1)) * cs).max()),
              "m_k": float(((sbar.abs().T @ qs.norm(dim=1)) * cs).max()),
              "m_v": float((A.T @ gs.norm(dim=1)).max()),
              "row_sum_max": float(sbar.sum(1).abs().max()), "row_abs_max": float(sbar.abs().sum(1).max())}
    out = []
    for t, where, n in ((q, iq, q0.shape[0]), (k, ik, k0.shape[0]), (val, ik, k0.shape[0])):
        full_size = torch.zeros(n, t.shape[1])
        full_size[where] = t.grad
        out.append(full_size)
    return out[0], out[1], out[2], scales


def finite_difference_check(name, q, k, val, g, p, mask, grads):
    """Central differences (h = 1e-6) of the stopped-base loss, base recomputed at the perturbed inputs but
    not differentiated: the stopped base is a constant only for the derivative, so FD must hold it fixed."""
    iq, ik = valid_indices(q.shape[0], mask), valid_indices(k.shape[0], mask)
    qb, kb = q.clone(), k.clone()

    def loss_at(qq, kk, vv):  # base potentials from the unperturbed inputs, tail and output from the perturbed
        return stopped_loss(qq[iq], kk[ik], vv[ik], g[iq], qb[iq], kb[ik], p)

    worst = 0.0
    for which, (t, grad) in enumerate(zip((q, k, val), grads)):
        for r in range(t.shape[0]):
            for c in range(t.shape[1]):
                args = [q.clone(), k.clone(), val.clone()]
                h = 1e-6
                args[which][r, c] += h
                plus = loss_at(*args)
                args[which][r, c] -= 2 * h
                minus = loss_at(*args)
                worst = max(worst, abs((plus - minus) / (2 * h) - float(grad[r, c])))
    scale = max(1.0, max(float(x.abs().max()) for x in grads))
    if not worst <= 1e-7 * scale:
        raise SystemExit(f"{name}: finite differences disagree with autograd ({worst:.3e})")


def stopped_loss(q, k, val, g, qb, kb, p):
    """The surrogate's loss with the base computed from (qb, kb) — equal to (q, k) except in the
    derivative — and the tail and output from (q, k, val)."""
    def system(qq, kk, vv, gg):
        if p["dustbin"]:
            z = lambda t: torch.cat([t, t.new_zeros(1, t.shape[1])])  # noqa: E731
            qq, kk, vv, gg = z(qq), z(kk), z(vv), z(gg)
        n_q, n_k = qq.shape[0], kk.shape[0]
        i, j = torch.arange(n_q)[:, None], torch.arange(n_k)[None, :]
        support = torch.ones(n_q, n_k, dtype=torch.bool) if p["dustbin"] else (i - j).abs() <= p["W"]
        rows, cols = support.any(1), support.any(0)
        x = torch.where(support, qq @ kk.T / (math.sqrt(qq.shape[1]) * p["eps"]),
                        torch.tensor(float("-inf")))[rows][:, cols]
        return x, vv[cols], gg[rows]

    xb, _, _ = system(qb, kb, val, g)
    x, vv, gg = system(q, k, val, g)
    ones_r, ones_c = torch.ones(x.shape[0], dtype=torch.bool), torch.ones(x.shape[1], dtype=torch.bool)
    u, v = x.new_zeros(x.shape[0]), x.new_zeros(x.shape[1])
    for _ in range(p["base_steps"]):
        u = band.row_half(xb, v, ones_r)
        v = band.col_half(xb, u, ones_c)
        m = u.mean()
        u, v = u - m, v + m
    for _ in range(p["tail_steps"]):
        u = band.row_half(x, v, ones_r)
        v = band.col_half(x, u, ones_c)
    return float((gg * (torch.exp(x + u[:, None] + v[None, :]) @ vv)).sum())


def make_case(out_dir, rng, spec):
    name, n_q, n_k, d, d_v, W, base_steps, tail_steps, eps, dustbin, padded = spec
    q, k, val, g = fx.gaussian(rng, n_q, d), fx.gaussian(rng, n_k, d), fx.gaussian(rng, n_k, d_v), \
        fx.gaussian(rng, n_q, d_v)
    mask = fx.padding_mask(n_q, padded)
    p = {"W": W, "base_steps": base_steps, "tail_steps": tail_steps, "eps": eps, "dustbin": dustbin}
    dq, dk, dv, scales = gradients(q, k, val, g, p, False, mask)
    full_dq, full_dk, full_dv, _ = gradients(q, k, val, g, p, True, mask)
    if n_q * d <= 64:
        finite_difference_check(name, q, k, val, g, p, mask, (dq, dk, dv))
    if tail_steps >= 1 and not scales["row_sum_max"] <= 1e-12 * max(1.0, scales["row_abs_max"]):
        raise SystemExit(f"{name}: rows of S̄ do not sum to zero ({scales['row_sum_max']:.3e})")
    arrays = {"q": q, "k": k, "v": val, "g": g, "dq": dq, "dk": dk, "dv": dv, "full_dq": full_dq,
              "full_dk": full_dk, "full_dv": full_dv}
    fx.write_case(out_dir, name, arrays, mask)
    op = (f"banded:W={W},base_steps={base_steps},tail_steps={tail_steps},eps={eps:g},"
          f"dustbin={'true' if dustbin else 'false'}")
    return {"name": name, "op": op, "n_q": n_q, "n_k": n_k, "d": d, "d_v": d_v, "W": W, "base_steps": base_steps,
            "tail_steps": tail_steps, "eps": eps, "dustbin": dustbin, "mask": mask is not None,
            "m_q": scales["m_q"], "m_k": scales["m_k"], "m_v": scales["m_v"]}


def main():
    args, rng = fx.start(__doc__, "banded_grad", seed=20261127)
    cases = [make_case(args.out, rng, spec) for spec in CASES]
    fx.write_manifest(args, __file__, "q k v g [mask] -> dq dk dv (surrogate: stopped base, autograd tail) "
                                      "full_dq full_dk full_dv (autograd through every step); loss sum(g * output)",
                      cases)


if __name__ == "__main__":
    main()
