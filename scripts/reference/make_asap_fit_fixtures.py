#!/usr/bin/python3
"""Writes the committed ASAP fitting cross-check fixtures (float64) to tests/fixtures/asap_fit/.

    /usr/bin/python3 scripts/reference/make_asap_fit_fixtures.py [--out tests/fixtures/asap_fit]

Each case folder holds exactly the arrays `tlens asap-fit` reads: q.npy and k.npy ([N, n, d], N head
instances), u.npy ([N, n], each the closure-ready dual of a Sinkhorn teacher: its final u for even T, u after
step T − 2 for odd T, −inf on padding under subsequence), optional mask.npy ([N, n], 1 valid / 0 padding) and
slices.npy ([L, d]); and the reference results beta_ls.npy and beta_kl.npy (asap_fit_reference.py).
cases.json lists eps, lambda_b, mask_mode, closing, and R² and δ of both fits.

Before writing, each case checks the LS solution against the normal equations and the KL solution's
moment condition (1/N) Σ Φᵀ(r − P_β 1) = λ_B β.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import asap_fit_reference as fit  # noqa: E402
import attention_reference as sink  # noqa: E402
import fixture_io as fx  # noqa: E402

# name, N, n, d, L, teacher T, eps, lambda_b, padded positions (same in every instance) or None, mask_mode
CASES = [
    ("n17_L8_T4", 5, 17, 8, 8, 4, 1.0, 1e-3, None, "subsequence"),
    ("n12_L16_T10_eps05", 6, 12, 8, 16, 10, 0.5, 1e-4, None, "subsequence"),
    ("n9_L6_T5_row", 4, 9, 4, 6, 5, 1.0, 1e-2, None, "subsequence"),
    ("mask_sub_n13_L6_T4", 4, 13, 6, 6, 4, 0.7, 1e-3, [1, 5, 11], "subsequence"),
    ("mask_keep_n12_L5_T6", 4, 12, 6, 5, 6, 0.6, 1e-3, [3, 8, 9], "keep-queries"),
]


def closure_ready_dual(q, k, budget, eps, mask, mask_mode):
    """u after step T − 1 (even T: the final u) or T − 2 (odd T) (docs/operators/asap.md#teacher-duals)."""
    steps = budget if budget % 2 == 0 else budget - 2
    return sink.sinkhorn_attention(q, k, budget=steps, eps=eps, mask=mask, mask_mode=mask_mode).u


def check_solutions(examples, beta_ls, beta_kl, lambda_b, n_rows):
    gram = sum(e["phi"][e["valid"]].T @ e["phi"][e["valid"]] for e in examples)
    moment = sum(e["phi"][e["valid"]].T @ e["target"][e["valid"]] for e in examples)
    residual = ((gram + n_rows * lambda_b * torch.eye(gram.shape[0])) @ beta_ls - moment).norm()
    if not residual < 1e-12 * (gram.norm() * beta_ls.norm() + moment.norm()):
        raise SystemExit(f"LS solution misses the normal equations by {residual:.3e}")
    rows = torch.zeros_like(beta_kl)
    for e in examples:
        u = e["phi"] @ beta_kl - e["a"]
        v = fit.asap.key_closure(e["s"], u, e["log_nu"], e["eps"])
        rows = rows + e["phi"].T @ (e["r"] - sink.transport_plan(e["s"], u, v, e["eps"]).sum(1))
    err = (rows / len(examples) - lambda_b * beta_kl).norm()
    if not err < 1e-12:
        raise SystemExit(f"KL solution misses the moment condition by {err:.3e}")


def make_case(out_dir, rng, spec):
    name, N, n, d, L, budget, eps, lambda_b, padded, mask_mode = spec
    mask = fx.padding_mask(n, padded)
    qs, ks, us = [], [], []
    for _ in range(N):
        q, k = fx.gaussian(rng, n, d), fx.gaussian(rng, n, d)
        qs.append(q)
        ks.append(k)
        us.append(closure_ready_dual(q, k, budget, eps, mask, mask_mode))
    z = fx.gaussian(rng, L, d)
    slices = z / z.norm(dim=1, keepdim=True)
    instances = [(q, k, u, mask) for q, k, u in zip(qs, ks, us)]
    examples = fit.fit_examples(instances, slices, eps, mask_mode)
    beta_ls, n_rows = fit.fit_ls(examples, lambda_b)
    beta_kl = fit.fit_kl(examples, beta_ls, lambda_b)
    check_solutions(examples, beta_ls, beta_kl, lambda_b, n_rows)
    arrays = dict(q=torch.stack(qs), k=torch.stack(ks), u=torch.stack(us), slices=slices, beta_ls=beta_ls,
                  beta_kl=beta_kl)
    if mask is not None:
        arrays["mask"] = mask.to(torch.float64)[None, :].repeat(N, 1)
    fx.write_case(out_dir, name, arrays)
    r2_ls, delta_ls = fit.quality(examples, beta_ls)
    r2_kl, delta_kl = fit.quality(examples, beta_kl)
    return {"name": name, "N": N, "n": n, "d": d, "L": L, "teacher_T": budget, "eps": eps, "lambda_b": lambda_b,
            "mask_mode": mask_mode, "closing": "column" if budget % 2 == 0 else "row", "mask": mask is not None,
            "rows": n_rows, "r2_ls": r2_ls, "delta_ls": delta_ls, "r2_kl": r2_kl, "delta_kl": delta_kl}


def main():
    args, rng = fx.start(__doc__, "asap_fit", seed=20261127)
    cases = [make_case(args.out, rng, spec) for spec in CASES]
    fx.write_manifest(args, __file__, "q k u [mask] slices -> beta_ls beta_kl", cases)


if __name__ == "__main__":
    main()
