#!/usr/bin/python3
"""Writes the committed banded-Sinkhorn cross-check fixtures (float64) to tests/fixtures/banded/.

    /usr/bin/python3 scripts/reference/make_banded_fixtures.py [--out tests/fixtures/banded]

Each case folder holds q, k, v, optional mask (bool) and the reference results plan (attention scale), output
(A V), u and v_dual (score coordinates, docs/conventions.md#duals; -inf on inactive or padded tokens),
tile_row_errors and tile_col_errors (per tile of the solved system) and, with a dustbin, dustbin_query_mass /
dustbin_key_mass. cases.json lists every case with its operator string.

Before writing, every case is checked against the properties of docs/operators/banded.md#checks: zero mass
off the band and on inactive tokens, exact active column sums, the all-raw iteration giving the same duals as
centred base + raw tail (the gauge ledger), a full band against dense Sinkhorn with
T = 2·(base_steps + tail_steps) from attention_reference.py, the dustbin path against the generic path on the
augmented tensors; and once, a converged rectangle whose rows sum to n_k/n_q (#rectangles there).
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_reference as sink  # noqa: E402
import banded_reference as band  # noqa: E402
import fixture_io as fx  # noqa: E402

# name, n_q, n_k, d, d_v, W, base_steps, tail_steps, tile, eps, dustbin, padded positions or None
CASES = [
    ("n1_W0", 1, 1, 4, 3, 0, 2, 1, 4, 1.0, False, None),
    ("n17_W0_diagonal", 17, 17, 8, 5, 0, 3, 2, 4, 1.0, False, None),
    ("n17_W2_b3_t2", 17, 17, 8, 5, 2, 3, 2, 4, 1.0, False, None),
    ("n17_W3_b5_t0", 17, 17, 8, 5, 3, 5, 0, 8, 0.5, False, None),
    ("n17_W3_b0_t4", 17, 17, 8, 5, 3, 0, 4, 8, 0.5, False, None),
    ("n33_W5_b15_t2_eps03", 33, 33, 16, 6, 5, 15, 2, 8, 0.3, False, None),
    ("n64_W8_b15_t2", 64, 64, 16, 8, 8, 15, 2, 16, 1.0, False, None),
    ("n20_full_band_b4_t1", 20, 20, 8, 5, 19, 4, 1, 8, 0.7, False, None),
    ("rect_13x29_W3", 13, 29, 8, 4, 3, 15, 2, 4, 1.0, False, None),
    ("rect_29x13_W3", 29, 13, 8, 4, 3, 15, 2, 8, 1.0, False, None),
    ("rect_9x6_W8_b40", 9, 6, 4, 3, 8, 40, 2, 4, 1.0, False, None),
    ("mask_sub_n17_W2", 17, 17, 8, 5, 2, 6, 2, 4, 1.0, False, [0, 5, 6, 16]),
    ("mask_sub_n21_W4_trailing", 21, 21, 8, 5, 4, 10, 2, 8, 0.5, False, [17, 18, 19, 20]),
    ("dustbin_n17_W2", 17, 17, 8, 5, 2, 15, 2, 8, 1.0, True, None),
    ("dustbin_rect_7x11_W1", 7, 11, 4, 3, 1, 10, 1, 4, 0.5, True, None),
    ("dustbin_mask_sub_n17_W3", 17, 17, 8, 5, 3, 8, 2, 4, 1.0, True, [1, 2, 16]),
]


def operator_string(W, base_steps, tail_steps, tile, eps, dustbin):
    return (f"banded:W={W},base_steps={base_steps},tail_steps={tail_steps},tile={tile},eps={eps:g},"
            f"dustbin={'true' if dustbin else 'false'}")


def raw_duals(q, k, p):
    """The same surrogate with no centring at all (raw from v = 0), in score coordinates (docs/conventions.md#duals)."""
    n_q = q.shape[0]
    i, j = torch.arange(n_q)[:, None], torch.arange(k.shape[0])[None, :]
    support = (i - j).abs() <= p["W"]
    x = torch.where(support, q @ k.T / (math.sqrt(q.shape[1]) * p["eps"]), torch.tensor(float("-inf")))
    rows, cols = support.any(1), support.any(0)
    v = torch.where(cols, 0.0, float("-inf"))
    for _ in range(p["base_steps"] + p["tail_steps"]):
        u = band.row_half(x, v, rows)
        v = band.col_half(x, u, cols)
    return p["eps"] * (u - math.log(n_q)), p["eps"] * v


def check_case(name, res, q, k, val, p, mask):
    def fail(what, err):
        raise SystemExit(f"{name}: {what} ({err:.3e})")

    valid = torch.ones(q.shape[0], dtype=torch.bool) if mask is None else mask
    idx = torch.nonzero(valid).squeeze(1)
    block = res.plan[idx[:, None], idx[None, :]] if mask is not None else res.plan
    n_q, n_k = block.shape
    if not p["dustbin"]:
        off_band = (torch.arange(n_q)[:, None] - torch.arange(n_k)[None, :]).abs() > p["W"]
        if (block[off_band] != 0).any():
            fail("mass off the band", block[off_band].abs().max())
        active_cols = ~off_band.all(0)
        err = (block.sum(0) - active_cols.to(q.dtype)).abs().max()
        if not err < 1e-12:
            fail("active column sums differ from 1", err)
        if mask is None:
            u, v = raw_duals(q, k, p)
            err = max((u - res.u).nan_to_num(posinf=0, neginf=0).abs().max(),
                      (v - res.v).nan_to_num(posinf=0, neginf=0).abs().max())
            if not err < 1e-12:
                fail("centred base + raw tail duals differ from the raw iteration", err)
        if p["W"] >= max(n_q, n_k) - 1 and n_q == n_k:
            dense = sink.sinkhorn_attention(q, k, val, budget=2 * (p["base_steps"] + p["tail_steps"]),
                                            eps=p["eps"], mask=mask)
            err = max((dense.plan - res.plan).abs().max(), (dense.u - res.u).nan_to_num(neginf=0).abs().max(),
                      (dense.v - res.v).nan_to_num(neginf=0).abs().max())
            if not err < 1e-12:
                fail("a full band differs from dense Sinkhorn", err)
    else:  # the generic path on the augmented tensors
        keys = idx if mask is not None else torch.arange(k.shape[0])
        qa, ka, va = (torch.cat([x, x.new_zeros(1, x.shape[1])]) for x in (q[idx], k[keys], val[keys]))
        generic = band.banded_attention(qa, ka, va, **dict(p, dustbin=False, W=qa.shape[0] + ka.shape[0]))
        err = (generic.plan[:-1, :-1] - block).abs().max()
        if not err < 1e-14:
            fail("dustbin path differs from the generic path on augmented inputs", err)


def check_rectangle_convergence():
    """docs/operators/banded.md#rectangles: on a connected rectangle the rows converge to n_k/n_q (9×6 gives 2/3)."""
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(9, 4, generator=gen), torch.randn(6, 4, generator=gen)
    res = band.banded_attention(q, k, W=8, base_steps=1000, tail_steps=0, tile=4, eps=1.0, dustbin=False)
    err = (res.plan.sum(1) - 6 / 9).abs().max()
    if not err < 1e-8:
        raise SystemExit(f"converged 9x6 rows differ from n_k/n_q by {err:.3e}")


def make_case(out_dir, rng, spec):
    name, n_q, n_k, d, d_v, W, base_steps, tail_steps, tile, eps, dustbin, padded = spec
    q, k, val = fx.gaussian(rng, n_q, d), fx.gaussian(rng, n_k, d), fx.gaussian(rng, n_k, d_v)
    mask = fx.padding_mask(n_q, padded)
    op = operator_string(W, base_steps, tail_steps, tile, eps, dustbin)
    p = band.parse_banded(op)
    del p["mask_mode"]
    res = band.banded_attention(q, k, val, mask=mask, **p)
    check_case(name, res, q, k, val, p, mask)

    arrays = {"q": q, "k": k, "v": val, "plan": res.plan, "output": res.output, "u": res.u, "v_dual": res.v,
              "tile_row_errors": res.tile_row_errors, "tile_col_errors": res.tile_col_errors}
    if dustbin:
        arrays.update(dustbin_query_mass=res.dustbin_query_mass, dustbin_key_mass=res.dustbin_key_mass)
    fx.write_case(out_dir, name, arrays, mask)
    return {"name": name, "op": op, "n_q": n_q, "n_k": n_k, "d": d, "W": W, "base_steps": base_steps,
            "tail_steps": tail_steps, "tile": tile, "eps": eps, "dustbin": dustbin, "mask": mask is not None}


def main():
    args, rng = fx.start(__doc__, "banded", seed=20240618)
    check_rectangle_convergence()
    cases = [make_case(args.out, rng, spec) for spec in CASES]
    fx.write_manifest(args, __file__, "q k v [mask] -> plan (A) output u v_dual (score coordinates) "
                                      "tile_row_errors tile_col_errors [dustbin_query_mass dustbin_key_mass]", cases)


if __name__ == "__main__":
    main()
