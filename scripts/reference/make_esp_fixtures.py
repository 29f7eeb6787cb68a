#!/usr/bin/python3
"""Writes the committed ESP cross-check fixtures (float64) to tests/fixtures/esp/.

    /usr/bin/python3 scripts/reference/make_esp_fixtures.py [--out tests/fixtures/esp]

Each case folder holds q, k, v, optional mask (bool) and slices (L×d directions for slicer=file), and the
reference results of esp_reference.py: plan (A = n_q·G), output (A V), weights, costs, matchings (float,
-1 at padded queries), ties and, for sort=soft, hard_distance. cases.json lists every case with its operator
string; cases with "slices": true add ",slices=<case>/slices.npy" to it.

Before writing, the hand-computed example of docs/operators/esp.md#checks is checked against its numbers, and
every hard case against its exact properties (rows 1, columns n_q/n_k under nw-corner), so a fixture is never
wrong by construction.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import esp_reference as ref  # noqa: E402
import fixture_io as fx  # noqa: E402

GOLDEN_Q = [[0, 3], [1, 0], [2, 2], [3, 1]]
GOLDEN_K = [[0.5, 1], [2.5, 0], [1.5, 3], [3.5, 2]]
GOLDEN_V = [[1, 0], [0, 1], [1, 1], [2, -1]]

# name, op, n_q, n_k, d, d_v, input kind ("gauss" | "grid" = values on a 0.5 grid, many ties | "golden"),
# padded positions or None, L of a file slicer or None
CASES = [
    ("golden_tau1", "esp:tau=1", 4, 4, 2, 2, "golden", None, None),
    ("golden_p1_tau1", "esp:tau=1,p=1", 4, 4, 2, 2, "golden", None, None),
    ("golden_soft_t05_tau1", "esp:tau=1,sort=soft,sort_temp=0.5", 4, 4, 2, 2, "golden", None, None),
    ("n1_d3", "esp", 1, 1, 3, 2, "gauss", None, None),
    ("n2_d1", "esp:tau=1", 2, 2, 1, 2, "gauss", None, None),
    ("n17_d8_default", "esp", 17, 17, 8, 5, "gauss", None, None),
    ("n17_d8_tau1_p1", "esp:tau=1,p=1", 17, 17, 8, 5, "gauss", None, None),
    ("n32_d16_tau005_p3", "esp:tau=0.05,p=3", 32, 32, 16, 4, "gauss", None, None),
    ("n17_d8_compat", "esp:tau=1,compat=reference-code", 17, 17, 8, 5, "gauss", None, None),
    ("ties_split_n20_d4", "esp:tau=0.5", 20, 20, 4, 3, "grid", None, None),
    ("ties_break_n20_d4", "esp:tau=0.5,ties=break", 20, 20, 4, 3, "grid", None, None),
    ("rect_13x29_nw", "esp:tau=0.3", 13, 29, 5, 3, "gauss", None, None),
    ("rect_29x13_nw_ties", "esp:tau=0.3", 29, 13, 5, 3, "grid", None, None),
    ("rect_7x4_interp", "esp:tau=0.3,rank_coupling=interpolation", 7, 4, 3, 2, "gauss", None, None),
    ("rect_13x29_interp_soft", "esp:tau=0.3,rank_coupling=interpolation,sort=soft,sort_temp=0.1", 13, 29, 5, 3,
     "gauss", None, None),
    ("soft_n12_d4_t01", "esp:tau=0.5,sort=soft,sort_temp=0.1", 12, 12, 4, 3, "gauss", None, None),
    ("soft_n10_d3_default_t", "esp:tau=1,sort=soft", 10, 10, 3, 3, "gauss", None, None),
    ("soft_ties_n12_d3", "esp:tau=0.5,sort=soft,sort_temp=0.05", 12, 12, 3, 3, "grid", None, None),
    ("mask_n17_d4", "esp:tau=0.5", 17, 17, 4, 3, "gauss", [0, 5, 6, 16], None),
    ("mask_soft_n17_d4", "esp:tau=0.5,sort=soft,sort_temp=0.2", 17, 17, 4, 3, "gauss", [3, 9], None),
    ("file_L12_n15_d4", "esp:tau=0.3,slicer=file", 15, 15, 4, 3, "gauss", None, 12),
    ("file_L6_soft_n9_d3", "esp:tau=0.3,slicer=file,sort=soft,sort_temp=0.1", 9, 9, 3, 2, "gauss", None, 6),
]


def golden_check(name, result):
    """The hand-computed 4-token, 2-axis example (docs/operators/esp.md#checks), to 10 digits."""
    def close(actual, expected, tol=1e-9):
        if not np.allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float), atol=tol, rtol=0):
            raise SystemExit(f"{name}: {actual} differs from the hand-computed {expected}")
    if name == "golden_tau1":
        close(result.matchings, [[0, 2, 1, 3], [2, 1, 3, 0]], 0)
        close(result.costs, [4.75, 3.25], 1e-12)
        w0 = 1 / (1 + math.exp(1.5))
        close(result.weights, [w0, 1 - w0], 1e-12)
        close(result.output, [[1, 0.8175744762], [0.1824255238, 1], [1.6351489524, -0.6351489524],
                              [1.1824255238, -0.1824255238]], 1e-10)
    elif name == "golden_p1_tau1":
        close(result.costs, [2.0706302199, 1.75], 1e-10)
        close(result.weights, [0.4205221661, 0.5794778339], 1e-10)
    elif name == "golden_soft_t05_tau1":
        close(result.costs, [3.837602295, 3.3195319724], 1e-9)
        close(result.weights, [0.3733035674, 0.6266964326], 1e-10)
        close(result.plan.sum(1), [0.9872797061, 0.9967767683, 1.0127202939, 1.0032232317], 1e-10)
        close(result.plan.sum(0), [1.0032232317, 0.9967767683, 0.9967767683, 1.0032232317], 1e-10)


def exactness_check(name, result, params, n_q, n_k, mask):
    if params.get("sort", "hard") != "hard" or params.get("rank_coupling", "nw-corner") != "nw-corner":
        return
    rows, cols = result.plan.sum(1), result.plan.sum(0)
    if mask is None:
        err = max((rows - 1).abs().max().item(), (cols - n_q / n_k).abs().max().item())
    else:  # self-attention on the valid tokens: their rows and columns sum to 1
        err = max((rows[mask] - 1).abs().max().item(), (cols[mask] - 1).abs().max().item())
    if not err < 1e-12:
        raise SystemExit(f"{name}: hard ESP is not doubly stochastic (error {err:.3e})")


def make_inputs(rng, kind, n_q, n_k, d, d_v):
    if kind == "golden":
        return [torch.tensor(x, dtype=torch.float64) for x in (GOLDEN_Q, GOLDEN_K, GOLDEN_V)]
    q, k = rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d))
    if kind == "grid":
        q, k = np.round(q * 2) / 2, np.round(k * 2) / 2
    return [torch.from_numpy(x) for x in (q, k, rng.standard_normal((n_k, d_v)))]


def make_case(out_dir, rng, spec):
    name, op, n_q, n_k, d, d_v, kind, padded, n_slices = spec
    q, k, val = make_inputs(rng, kind, n_q, n_k, d, d_v)
    mask = fx.padding_mask(n_q, padded)
    params = ref.parse_esp(op)
    arrays = {"q": q, "k": k, "v": val}
    if n_slices:
        phi = rng.standard_normal((n_slices, d))
        arrays["slices"] = torch.from_numpy(phi / np.linalg.norm(phi, axis=1, keepdims=True))
        params["slices_array"] = arrays["slices"]
    result = ref.esp_attention(q, k, val, mask=mask, **params)
    golden_check(name, result)
    exactness_check(name, result, params, n_q, n_k, mask)

    arrays.update({"plan": result.plan, "output": result.output, "weights": result.weights,
                   "costs": result.costs, "matchings": result.matchings.to(torch.float64), "ties": result.ties})
    if result.hard_distance is not None:
        arrays["hard_distance"] = result.hard_distance.reshape(1)
    fx.write_case(out_dir, name, arrays, mask)
    return {"name": name, "op": op, "n_q": n_q, "n_k": n_k, "d": d, "d_v": d_v, "mask": mask is not None,
            "slices": bool(n_slices), "sort": params.get("sort", "hard")}


def main():
    args, rng = fx.start(__doc__, "esp", seed=20250207)
    cases = [make_case(args.out, rng, spec) for spec in CASES]
    fx.write_manifest(args, __file__, "q k v [mask] [slices] -> plan (A = n_q G) output (A V) weights costs "
                                      "matchings ties [hard_distance]", cases)


if __name__ == "__main__":
    main()
