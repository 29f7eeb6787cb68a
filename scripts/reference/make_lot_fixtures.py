#!/usr/bin/python3
"""Writes the committed LOT cross-check fixtures (float64) to tests/fixtures/lot/.

    /usr/bin/python3 scripts/reference/make_lot_fixtures.py [--out tests/fixtures/lot]

Each case folder holds the inputs q, k, v, optional mask (bool), the given pivot measure pivots (Z, r×d) and
mass_logits (θ, r) -- given as files so that no k-means has to agree -- and the reference results plan
(A = n_q·P1 diag(1/w) P2), output (A V), P1, P2, w and the duals u1, v1, u2, v2 (score coordinates; 0 where
padded). cases.json lists every case with its operator string *without* the two file paths; a replaying test
appends `,pivots=<case>/pivots.npy,mass_logits=<case>/mass_logits.npy`.

Before writing, every case is checked against a second formulation (plain matrix scaling) to 1e-12, T = 1
cases against agent attention softmax(S1/eps)·softmax(S2/eps), and the odd/even exact side of A
(docs/operators/lot.md#checks), so a fixture is never wrong by construction.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_io as fx  # noqa: E402
import lot_reference as ref  # noqa: E402

# name, n_q, n_k, d, d_v, r, T, eps, mass_temp, pivot std (None: 1/√d), query scale, padded positions or None
CASES = [
    ("n1_r1_T3", 1, 1, 4, 3, 1, 3, 1.0, 0.5, None, 1.0, None),
    ("n16_r4_T1_eps1", 16, 16, 8, 5, 4, 1, 1.0, 0.5, None, 1.0, None),
    ("n16_r4_T2_eps05", 16, 16, 8, 5, 4, 2, 0.5, 0.5, 1.0, 1.0, None),
    ("n16_r4_T5_eps1", 16, 16, 8, 5, 4, 5, 1.0, 0.5, 1.0, 1.0, None),
    ("n16_r4_T7_eps01_large", 16, 16, 8, 5, 4, 7, 0.1, 0.5, 1.0, 3.0, None),
    ("n33_r8_T5_eps03", 33, 33, 16, 6, 8, 5, 0.3, 0.5, None, 1.0, None),
    ("n33_r8_T6_eps1_temp2", 33, 33, 16, 6, 8, 6, 1.0, 2.0, 1.0, 1.0, None),
    ("n24_r1_T3", 24, 24, 8, 4, 1, 3, 1.0, 0.5, 1.0, 1.0, None),
    ("n12_r12_T4", 12, 12, 6, 4, 12, 4, 0.7, 0.5, 1.0, 1.0, None),
    ("n40_r6_T51_eps05", 40, 40, 8, 5, 6, 51, 0.5, 0.5, 1.0, 1.0, None),
    ("rect_13x29_r5_T5", 13, 29, 8, 4, 5, 5, 1.0, 0.5, 1.0, 1.0, None),
    ("rect_29x13_r6_T4", 29, 13, 8, 4, 6, 4, 0.5, 0.5, 1.0, 1.0, None),
    ("mask_sub_n20_r4_T5", 20, 20, 8, 5, 4, 5, 1.0, 0.5, 1.0, 1.0, [3, 7, 8, 15, 19]),
    ("mask_sub_n20_r5_T2", 20, 20, 8, 5, 5, 2, 0.5, 0.5, 1.0, 1.0, [0, 1, 10, 11, 12, 18]),
]


def operator_string(r, budget, eps, mass_temp):
    return f"lot:r={r},T={budget},eps={eps:g},mass_temp={mass_temp:g},pivot_init=file"


def check_case(name, result, q, k, pivots, logits, budget, eps, mass_temp, mask):
    qv, kv, plan = q, k, result.plan
    if mask is not None:  # subsequence: the valid block is LOT on the valid tokens
        idx = torch.nonzero(mask).squeeze(1)
        qv, kv, plan = q[idx], k[idx], plan[idx[:, None], idx[None, :]]
    expected = ref.scaling_lot_plan(qv, kv, pivots, logits, eps, budget, mass_temp)
    err = (plan - expected).abs().max().item()
    if not err < 1e-12:
        raise SystemExit(f"{name}: log-domain LOT differs from the scaling form by {err:.3e}")
    if budget == 1:
        d = q.shape[1]
        agent = torch.softmax(qv @ pivots.T / math.sqrt(d) / eps, 1) @ torch.softmax(pivots @ kv.T / math.sqrt(d) / eps, 1)
        err = (plan - agent).abs().max().item()
        if not err < 1e-14:
            raise SystemExit(f"{name}: T=1 is not agent attention (error {err:.3e})")
    exact_side = plan.sum(1) if budget % 2 == 1 else plan.sum(0) * kv.shape[0] / qv.shape[0]
    err = (exact_side - 1).abs().max().item()
    if not err < 1e-12:
        raise SystemExit(f"{name}: the exact side of A is off by {err:.3e}")


def make_case(out_dir, rng, spec):
    name, n_q, n_k, d, d_v, r, budget, eps, mass_temp, pivot_std, q_scale, padded = spec
    q = q_scale * fx.gaussian(rng, n_q, d)
    k, val = fx.gaussian(rng, n_k, d), fx.gaussian(rng, n_k, d_v)
    pivots = (pivot_std or 1 / math.sqrt(d)) * fx.gaussian(rng, r, d)
    logits = 0.5 * fx.gaussian(rng, r)
    mask = fx.padding_mask(n_q, padded)
    result = ref.lot_attention(q, k, val, pivots=pivots, mass_logits=logits, eps=eps, budget=budget,
                               mass_temp=mass_temp, mask=mask)
    check_case(name, result, q, k, pivots, logits, budget, eps, mass_temp, mask)

    fx.write_case(out_dir, name, {"q": q, "k": k, "v": val, "pivots": pivots, "mass_logits": logits,
                                  "plan": result.plan, "output": result.output, "P1": result.P1, "P2": result.P2,
                                  "w": result.w, "u1": result.u1, "v1": result.v1, "u2": result.u2,
                                  "v2": result.v2}, mask)
    return {"name": name, "op": operator_string(r, budget, eps, mass_temp), "n_q": n_q, "n_k": n_k, "d": d,
            "d_v": d_v, "r": r, "T": budget, "eps": eps, "mass_temp": mass_temp, "mask": mask is not None}


def main():
    args, rng = fx.start(__doc__, "lot", seed=20250611)
    cases = [make_case(args.out, rng, spec) for spec in CASES]
    fx.write_manifest(args, __file__,
                      "q k v pivots mass_logits [mask] -> plan (A = n_q P1 diag(1/w) P2) output (A V) "
                      "P1 P2 w u1 v1 u2 v2 (score coordinates, 0 where padded)", cases,
                      op_note="append ,pivots=<case>/pivots.npy,mass_logits=<case>/mass_logits.npy to op")


if __name__ == "__main__":
    main()
