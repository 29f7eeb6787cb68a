#!/usr/bin/python3
"""Times the reference formulations on the CPU and prints JSON on stdout.

    /usr/bin/python3 scripts/reference/bench_reference.py --op sinkhorn:T=10,eps=1 --op softmax \
        --n 128,256,512 --d 64 --repeats 7 --threads 1 --precision f64 [--lazy]

What is timed matches `tlens bench` (app/cli/bench_command.cpp): one head with Q, K, V ~ N(0, 1) of shape
n × d; the whole operator (scores, normalisations, the dense plan A and the output A V), or with --lazy only
O = A V without the n × n plan. The median of `repeats` runs after half a second of untimed warm-up runs is reported.

Formulations: softmax/sinkhorn (attention_reference.py), asap (asap_reference.py), banded
(banded_reference.py), lot (lot_reference.py) are the literal dense references the fixtures come from; diff is
the DiffTransformer layer's own form (diff_attention below);
esp hard and every --lazy run use structured_reference.py (permutations, band, factors). File parameters
(asap slices/beta/dual, lot pivots/mass_logits, esp slices) are read from the paths in the operator string,
which `tlens bench` writes so both sides use the same arrays.

Threads: `tlens bench` passes --threads equal to the number of threads its own CPU path uses (its --threads,
every core by default), and torch.set_num_threads gets that value, so the ratio compares like with like. Operators the reference does not cover are reported with "error" instead of a time.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import asap_reference  # noqa: E402
import attention_reference as ref  # noqa: E402
import banded_reference  # noqa: E402
import esp_reference  # noqa: E402
import lot_reference  # noqa: E402
import structured_reference as structured  # noqa: E402

MATRIX_FILES = ("slices", "pivots")        # L×d, r×d
VECTOR_FILES = ("beta", "dual", "mass_logits")  # length L, n, r (an n×1 file is read as a vector, as in C++)


def file_arrays(op, dtype):
    """The .npy files named in the operator string, as tensors."""
    arrays = {}
    for item in op.partition(":")[2].split(","):
        key, _, value = item.partition("=")
        if key in MATRIX_FILES or key in VECTOR_FILES:
            array = torch.from_numpy(np.load(value)).to(dtype)
            arrays[key] = array.reshape(-1) if key in VECTOR_FILES else array
    return arrays


def lot_params(op):
    p = {"r": 32, "eps": 1.0, "T": 5, "mass_temp": 0.5}
    for item in filter(None, op.partition(":")[2].split(",")):
        key, _, value = item.partition("=")
        if key in p:
            p[key] = type(p[key])(float(value)) if key != "r" else int(value)
    return p


def diff_attention(q, k, v, lam):
    """DiffTransformer attention as its layer computes it (docs/operators/diff.md): torch.softmax of each half's
    scores, their difference A = A1 − lambda·A2, and O = A V."""
    h = q.shape[1] // 2
    first = torch.softmax(q[:, :h] @ k[:, :h].T / math.sqrt(h), dim=-1)
    second = torch.softmax(q[:, h:] @ k[:, h:].T / math.sqrt(h), dim=-1)
    plan = first - lam * second
    return plan, plan @ v


def diff_lambda(op):
    lam = 0.5  # the family's default
    for item in filter(None, op.partition(":")[2].split(",")):
        key, _, value = item.partition("=")
        if key == "lambda":
            lam = float(value)
        elif key != "mask_mode":
            raise ValueError(f"unknown diff parameter {key!r}")
    return lam


def formulation(op, lazy, dtype):
    """A callable (q, k, v) running the reference of `op` (dense, or only A V with --lazy)."""
    family = op.partition(":")[0]
    files = file_arrays(op, dtype)
    if family == "esp":
        p = dict(esp_reference.DEFAULTS, **esp_reference.parse_esp(op))
        if "slices" in files:
            p["slices_array"] = files["slices"]
        return (lambda q, k, v: structured.esp_hard_output(q, k, v, p)) if lazy else \
            (lambda q, k, v: structured.esp_hard_plan(q, k, v, p))
    if family == "lot":
        p = lot_params(op)
        if "pivots" not in files or "mass_logits" not in files:
            raise ValueError("the LOT reference needs pivots and mass_logits files")
        z, logits = files["pivots"], files["mass_logits"]
        if lazy:
            return lambda q, k, v: structured.lot_output(q, k, v, z, logits, p["eps"], p["T"], p["mass_temp"])
        return lambda q, k, v: lot_reference.lot_attention(q, k, v, pivots=z, mass_logits=logits, eps=p["eps"],
                                                           budget=p["T"], mass_temp=p["mass_temp"])
    if family == "banded":
        p = banded_reference.parse_banded(op)
        del p["mask_mode"]
        return (lambda q, k, v: structured.banded_output(q, k, v, p)) if lazy else \
            (lambda q, k, v: banded_reference.banded_attention(q, k, v, **p))
    if lazy:
        raise ValueError(f"{family} has no lazy path")
    if family == "diff":
        lam = diff_lambda(op)
        return lambda q, k, v: diff_attention(q, k, v, lam)
    if family == "asap":
        p = dict(asap_reference.parse_asap(op), **files)
        return lambda q, k, v: asap_reference.asap_attention(q, k, v, **p)
    family, params = ref.parse_operator(op)
    return lambda q, k, v: ref.run_operator(family, params, q, k, v)


WARM_UP_SECONDS = 0.5


def time_operator(run, n, d, repeats, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    q, k, val = (torch.randn(n, d, generator=gen, dtype=dtype) for _ in range(3))
    # Untimed calls for at least WARM_UP_SECONDS (at least one), as the C++ side does (app/cli/bench_command.cpp):
    # allocator and kernels, and a two-thread process runs small parallel operations several times slower for its
    # first fraction of a second, which one call does not cover.
    warm_up_start = time.perf_counter()
    run(q, k, val)
    while time.perf_counter() - warm_up_start < WARM_UP_SECONDS:
        run(q, k, val)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(q, k, val)
        seconds.append(time.perf_counter() - start)
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", action="append", required=True, help="operator string, repeatable")
    parser.add_argument("--n", required=True, help="comma-separated sequence lengths")
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", choices=["f64", "f32"], default="f64")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lazy", action="store_true", help="time O = A V only, without the n × n plan")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    dtype = torch.float64 if args.precision == "f64" else torch.float32
    sizes = [int(x) for x in args.n.split(",") if x]
    results = []
    for op in args.op:
        for n in sizes:
            entry = {"op": op, "n": n}
            try:
                seconds = time_operator(formulation(op, args.lazy, dtype), n, args.d, args.repeats, dtype, args.seed)
                entry.update(median_seconds=statistics.median(seconds), seconds=seconds)
            except ValueError as e:
                entry["error"] = str(e)
            results.append(entry)
    print(json.dumps({"implementation": "pytorch-reference", "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "precision": args.precision, "d": args.d,
                      "repeats": args.repeats, "lazy": args.lazy, "results": results}))


if __name__ == "__main__":
    main()
