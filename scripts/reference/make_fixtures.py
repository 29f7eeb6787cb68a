#!/usr/bin/python3
"""Writes the committed Sinkhorn/softmax cross-check fixtures (float64) to tests/fixtures/sinkhorn/.

    /usr/bin/python3 scripts/reference/make_fixtures.py [--out tests/fixtures/sinkhorn]

Each case folder holds q, k, v (values), optional mask (bool), and the reference results plan (A = n_q·P),
u, v_dual (final duals, score coordinates, -inf where padded) and output (A V). cases.json lists every case
with its operator string, so the C++ test and `tlens plan` replay exactly the same operator.

Before writing, every case is checked against a second, independent formulation: plain matrix
normalisation Sinkhorn in attention scale (docs/operators/sinkhorn.md#definition), so a fixture is never wrong
by construction.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_reference as ref  # noqa: E402
import fixture_io as fx  # noqa: E402

# name, family, n_q, n_k, d, d_v, T, eps, mask (list of padded positions or None), mask_mode
CASES = [
    ("n1_T1", "sinkhorn", 1, 1, 4, 3, 1, 1.0, None, None),
    ("n1_T10", "sinkhorn", 1, 1, 4, 3, 10, 0.3, None, None),
    ("n2_T2_eps03", "sinkhorn", 2, 2, 1, 2, 2, 0.3, None, None),
    ("n17_T1_eps1", "sinkhorn", 17, 17, 8, 5, 1, 1.0, None, None),
    ("n17_T2_eps03", "sinkhorn", 17, 17, 8, 5, 2, 0.3, None, None),
    ("n17_T3_eps03", "sinkhorn", 17, 17, 8, 5, 3, 0.3, None, None),
    ("n17_T10_eps1", "sinkhorn", 17, 17, 8, 5, 10, 1.0, None, None),
    ("n64_T10_eps03", "sinkhorn", 64, 64, 32, 8, 10, 0.3, None, None),
    ("n64_T25_eps1", "sinkhorn", 64, 64, 16, 8, 25, 1.0, None, None),
    ("rect_13x29_T10_eps05", "sinkhorn", 13, 29, 8, 4, 10, 0.5, None, None),
    ("rect_29x13_T3_eps1", "sinkhorn", 29, 13, 8, 4, 3, 1.0, None, None),
    ("mask_sub_n17_T3_eps03", "sinkhorn", 17, 17, 8, 5, 3, 0.3, [4, 12, 13, 14, 15, 16], "subsequence"),
    ("mask_sub_n17_T10_eps1", "sinkhorn", 17, 17, 8, 5, 10, 1.0, [0, 9, 16], "subsequence"),
    ("mask_sub_one_valid_T4", "sinkhorn", 5, 5, 3, 2, 4, 1.0, [0, 1, 3, 4], "subsequence"),
    ("mask_keep_n17_T3_eps03", "sinkhorn", 17, 17, 8, 5, 3, 0.3, [4, 12, 13, 14, 15, 16], "keep-queries"),
    ("mask_keep_n17_T10_eps1", "sinkhorn", 17, 17, 8, 5, 10, 1.0, [0, 9, 16], "keep-queries"),
    ("softmax_n17", "softmax", 17, 17, 8, 5, 1, 1.0, None, None),
    ("softmax_rect_7x11", "softmax", 7, 11, 4, 3, 1, 1.0, None, None),
    ("softmax_mask_sub_n17", "softmax", 17, 17, 8, 5, 1, 1.0, [2, 15, 16], "subsequence"),
    ("softmax_mask_keep_n17", "softmax", 17, 17, 8, 5, 1, 1.0, [2, 15, 16], "keep-queries"),
]


def operator_string(family, budget, eps, mask_mode):
    params = [] if family == "softmax" else [f"T={budget}", f"eps={eps:g}"]
    if mask_mode:
        params.append(f"mask_mode={mask_mode}")
    return family + (":" + ",".join(params) if params else "")


def matrix_sinkhorn(q, k, budget, eps, key_active, query_rows):
    """Matrix-normalisation Sinkhorn in attention scale: A0 = exp(S/eps) on active keys, then N_r, N_c alternately.

    Rows of kept queries sum to 1; active columns sum to n_q/n_k (1 when square)."""
    a = torch.exp(ref.scores(q, k) / eps) * key_active[None, :] * query_rows[:, None]
    n_rows, n_cols = int(query_rows.sum()), int(key_active.sum())
    if query_rows.all():  # keep-queries or unmasked: mu = 1/n_q, nu = 1/n_k on active keys
        n_cols = k.shape[0]
    col_target = n_rows / n_cols
    for t in range(1, budget + 1):
        if t % 2 == 1:
            sums = a.sum(1, keepdim=True)
            a = torch.where(sums > 0, a / sums, a)
        else:
            sums = a.sum(0, keepdim=True)
            a = torch.where(sums > 0, a * col_target / sums, a)
    return a


def check_against_matrix_form(name, result, q, k, budget, eps, mask, mask_mode):
    n_q, n_k = q.shape[0], k.shape[0]
    key_active = torch.ones(n_k, dtype=q.dtype) if mask is None else mask.to(q.dtype)
    query_rows = torch.ones(n_q, dtype=q.dtype)
    if mask is not None and mask_mode == "subsequence":
        query_rows = mask.to(q.dtype)
    expected = matrix_sinkhorn(q, k, budget, eps, key_active, query_rows)
    err = (result.plan - expected).abs().max().item()
    if not err < 1e-12:
        raise SystemExit(f"{name}: log-domain plan differs from matrix Sinkhorn by {err:.3e}")
    if budget == 1 and mask is None:
        err = (result.plan - torch.softmax(ref.scores(q, k), dim=1)).abs().max().item()
        if not err < 1e-12:
            raise SystemExit(f"{name}: T=1 plan differs from torch.softmax by {err:.3e}")


def make_case(out_dir, rng, spec):
    name, family, n_q, n_k, d, d_v, budget, eps, padded, mask_mode = spec
    q, k, val = fx.gaussian(rng, n_q, d), fx.gaussian(rng, n_k, d), fx.gaussian(rng, n_k, d_v)
    mask = fx.padding_mask(n_q, padded)
    op = operator_string(family, budget, eps, mask_mode)
    fam, params = ref.parse_operator(op)
    result = ref.run_operator(fam, params, q, k, val, mask)
    check_against_matrix_form(name, result, q, k, budget if family == "sinkhorn" else 1,
                              eps if family == "sinkhorn" else 1.0, mask, mask_mode)

    fx.write_case(out_dir, name, {"q": q, "k": k, "v": val, "plan": result.plan, "u": result.u,
                                  "v_dual": result.v, "output": result.output}, mask)
    return {"name": name, "op": op, "family": family, "n_q": n_q, "n_k": n_k, "d": d, "d_v": d_v,
            "T": budget if family == "sinkhorn" else 1, "eps": eps if family == "sinkhorn" else 1.0,
            "mask": mask is not None, "mask_mode": mask_mode or "subsequence"}


def main():
    args, rng = fx.start(__doc__, "sinkhorn", seed=20240531)
    cases = [make_case(args.out, rng, spec) for spec in CASES]
    fx.write_manifest(args, __file__, "q k v [mask] -> plan (A = n_q P) u v_dual (score coordinates) output (A V)",
                      cases)


if __name__ == "__main__":
    main()
