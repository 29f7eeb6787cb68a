#!/usr/bin/python3
"""Writes the committed ASAP cross-check fixtures (float64) to tests/fixtures/asap/.

    /usr/bin/python3 scripts/reference/make_asap_fixtures.py [--out tests/fixtures/asap]

Each case folder holds the inputs q, k, v, optional mask (bool) and the compiled layer as files: slices (Θ, L×d)
and beta (β, L), or dual (u0, score coordinates, -inf where a subsequence teacher padded). The reference
results are plan (A = n_q·P), output (A V), u and v_dual (final duals, score coordinates, -inf where padded),
u0 (the predicted source dual Φβ − a, or the given dual) and, for slices cases, features (Φ, 0 where padded
under subsequence). cases.json lists each case's operator string *without* the file paths and the names of its
file parameters; a replaying test appends `,slices=<case>/slices.npy,beta=<case>/beta.npy` (or `,dual=...`).

Before writing, the 1-D potential is checked on a hand-computed example, every case against its exact
closing marginals and ASAP-0 against its column-softmax form; dual cases take a teacher dual from
attention_reference.py and must reproduce the teacher (docs/operators/asap.md#teacher-duals, #checks).
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import asap_reference as asap  # noqa: E402
import attention_reference as sink  # noqa: E402
import fixture_io as fx  # noqa: E402

# name, n_q, n_k, d, d_v, L (None: the dual of a teacher with budget `teacher_T`), variant, closing, eps,
# padded positions or None, mask_mode, teacher_T (dual cases) or None, duplicated query rows (ties)
CASES = [
    ("n1_L3", 1, 1, 4, 3, 3, "two-sided", "column", 1.0, None, None, None, False),
    ("n2_d1_L2_asap0", 2, 2, 1, 2, 2, "asap0", "column", 0.3, None, None, None, False),
    ("n17_L5_col", 17, 17, 8, 5, 5, "two-sided", "column", 1.0, None, None, None, False),
    ("n17_L8_row_eps03", 17, 17, 8, 5, 8, "two-sided", "row", 0.3, None, None, None, False),
    ("n17_L8_asap0_eps03", 17, 17, 8, 5, 8, "asap0", "column", 0.3, None, None, None, False),
    ("n33_L32_asap0", 33, 33, 16, 6, 32, "asap0", "column", 1.0, None, None, None, False),
    ("n64_L32_col", 64, 64, 32, 8, 32, "two-sided", "column", 1.0, None, None, None, False),
    ("ties_n12_L6_col", 12, 12, 4, 3, 6, "two-sided", "column", 0.5, None, None, None, True),
    ("rect_13x29_L6_col", 13, 29, 8, 4, 6, "two-sided", "column", 1.0, None, None, None, False),
    ("rect_29x13_L6_asap0", 29, 13, 8, 4, 6, "asap0", "column", 0.5, None, None, None, False),
    ("mask_sub_n17_L8_col", 17, 17, 8, 5, 8, "two-sided", "column", 1.0, [0, 9, 16], "subsequence", None, False),
    ("mask_keep_n17_L8_col", 17, 17, 8, 5, 8, "two-sided", "column", 1.0, [4, 12, 13, 14, 15, 16],
     "keep-queries", None, False),
    ("mask_keep_n17_L8_row", 17, 17, 8, 5, 8, "two-sided", "row", 0.3, [0, 9, 16], "keep-queries", None, False),
    ("mask_keep_n17_L8_asap0", 17, 17, 8, 5, 8, "asap0", "column", 1.0, [2, 3, 15], "keep-queries", None, False),
    ("dual_T10_asap0", 17, 17, 8, 5, None, "asap0", "column", 1.0, None, None, 10, False),
    ("dual_T10_col_eps03", 17, 17, 8, 5, None, "two-sided", "column", 0.3, None, None, 10, False),
    ("dual_T5_row", 17, 17, 8, 5, None, "two-sided", "row", 1.0, None, None, 5, False),
    ("dual_mask_sub_T4_asap0", 17, 17, 8, 5, None, "asap0", "column", 1.0, [0, 9, 16], "subsequence", 4, False),
    ("dual_mask_keep_T6_col", 17, 17, 8, 5, None, "two-sided", "column", 0.5, [4, 12, 13], "keep-queries", 6,
     False),
]


def operator_string(variant, closing, eps, mask_mode):
    params = [f"variant={variant}", f"closing={closing}", f"eps={eps:g}"]
    if mask_mode:
        params.append(f"mask_mode={mask_mode}")
    return "asap:" + ",".join(params)


def check_hand_example():
    """Hand-computed: x = (0, 1, 3), y = (−1, 0.5, 2) give f = (0, 1.5, 4.5); shuffled inputs follow."""
    f = asap.potential_1d(torch.tensor([0.0, 1, 3]), torch.tensor([-1.0, 0.5, 2]))
    g = asap.potential_1d(torch.tensor([3.0, 0, 1]), torch.tensor([2.0, -1, 0.5]))
    if not (torch.allclose(f, torch.tensor([0.0, 1.5, 4.5]), atol=1e-15)
            and torch.allclose(g, torch.tensor([4.5, 0.0, 1.5]), atol=1e-15)):
        raise SystemExit(f"1-D potential fails the hand example: {f}, {g}")


def teacher_dual(q, k, budget, eps, mask, mask_mode):
    """The closure-ready teacher dual (docs/operators/asap.md#teacher-duals): u^(T−1) for even T, u^(T−2) for odd T."""
    closure_ready = budget - 1 if budget % 2 == 0 else budget - 2
    return sink.sinkhorn_attention(q, k, budget=closure_ready, eps=eps, mask=mask,
                                   mask_mode=mask_mode or "subsequence").u


def check_case(name, res, q, k, p, mask, teacher_T):
    n_q, n_k = q.shape[0], k.shape[0]
    plan = res.plan
    # Targets (docs/conventions.md#marginal-errors): kept rows sum to 1; active columns to n_q/n_k (1 on
    # the valid block under subsequence).
    if mask is not None and p["mask_mode"] == "subsequence":
        row_target = col_target = mask.to(q.dtype)
    else:
        row_target = torch.ones(n_q)
        col_target = (torch.ones(n_k) if mask is None else mask.to(q.dtype)) * n_q / n_k
    exact_cols = p["variant"] == "asap0" or p["closing"] == "column"
    err = (plan.sum(0) - col_target if exact_cols else plan.sum(1) - row_target).abs().max()
    if not err < 1e-12:
        raise SystemExit(f"{name}: the closing side is not exact ({err:.3e})")
    if p["variant"] == "asap0" and mask is None:  # ASAP-0 is a column softmax
        s = sink.scores(q, k)
        soft = torch.softmax((s + res.u0[:, None]) / p["eps"], dim=0) * n_q / k.shape[0]
        err = (plan - soft).abs().max()
        if not err < 1e-12:
            raise SystemExit(f"{name}: ASAP-0 differs from its column-softmax form by {err:.3e}")
    if teacher_T is not None:  # the teacher is reproduced
        budget = teacher_T + 2 if p["variant"] == "two-sided" and p["closing"] == "column" else teacher_T
        teacher = sink.sinkhorn_attention(q, k, budget=budget, eps=p["eps"], mask=mask,
                                          mask_mode=p["mask_mode"] or "subsequence")
        err = (plan - teacher.plan).abs().max()
        if not err < 1e-12:
            raise SystemExit(f"{name}: ASAP from the teacher dual differs from the T={budget} teacher by {err:.3e}")


def make_case(out_dir, rng, spec):
    name, n_q, n_k, d, d_v, n_slices, variant, closing, eps, padded, mask_mode, teacher_T, ties = spec
    q = fx.gaussian(rng, n_q, d)
    if ties:  # duplicated queries project to tied x on every slice
        q[n_q // 2:] = q[: n_q - n_q // 2]
    k, val = fx.gaussian(rng, n_k, d), fx.gaussian(rng, n_k, d_v)
    mask = fx.padding_mask(n_q, padded)
    op = operator_string(variant, closing, eps, mask_mode)
    p = asap.parse_asap(op)
    inputs = {"q": q, "k": k, "v": val}
    if teacher_T is None:
        z = fx.gaussian(rng, n_slices, d)
        inputs["slices"] = z / z.norm(dim=1, keepdim=True)  # uniform on the sphere
        inputs["beta"] = fx.gaussian(rng, n_slices) / math.sqrt(n_slices)
        p.update(slices=inputs["slices"], beta=inputs["beta"])
    else:
        inputs["dual"] = teacher_dual(q, k, teacher_T, eps, mask, mask_mode)
        p["dual"] = inputs["dual"]
    res = asap.asap_attention(q, k, val, mask=mask, **p)
    check_case(name, res, q, k, p, mask, teacher_T)

    arrays = dict(inputs, plan=res.plan, output=res.output, u=res.u, v_dual=res.v, u0=res.u0)
    if res.features is not None:
        arrays["features"] = res.features
    fx.write_case(out_dir, name, arrays, mask)
    return {"name": name, "op": op, "files": ["dual"] if teacher_T else ["slices", "beta"], "n_q": n_q, "n_k": n_k,
            "d": d, "L": n_slices, "variant": variant, "closing": closing, "eps": eps,
            "mask": mask is not None, "mask_mode": mask_mode or "subsequence", "teacher_T": teacher_T}


def main():
    args, rng = fx.start(__doc__, "asap", seed=20240617)
    check_hand_example()
    cases = [make_case(args.out, rng, spec) for spec in CASES]
    fx.write_manifest(args, __file__, "q k v [mask] slices+beta | dual -> plan (A = n_q P) output u v_dual u0 "
                                      "[features]", cases)


if __name__ == "__main__":
    main()
