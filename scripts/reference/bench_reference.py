#!/usr/bin/python3
"""Times the reference formulation (attention_reference.py) on the CPU and prints JSON on stdout.

    /usr/bin/python3 scripts/reference/bench_reference.py --op sinkhorn:T=10,eps=1 --op softmax \
        --n 128,256,512 --d 64 --repeats 7 --threads 1 --precision f64

What is timed matches `tlens bench` (app/cli/bench_command.cpp): one head with Q, K, V ~ N(0, 1) of shape
n × d; the whole operator (scores, T log-domain normalisations, the dense plan A and the output A V).
The median of `repeats` runs after one untimed warm-up is reported.

Threads: `tlens bench` passes --threads equal to the number of threads its own CPU path uses (Eigen without
OpenMP is single-threaded, so 1), and torch.set_num_threads gets that value, so the ratio compares like with
like. Families the reference does not implement are reported with "error" instead of a time.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_reference as ref  # noqa: E402


def time_operator(family, params, n, d, repeats, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    q, k, val = (torch.randn(n, d, generator=gen, dtype=dtype) for _ in range(3))
    ref.run_operator(family, params, q, k, val)  # warm-up: allocator and kernels
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        ref.run_operator(family, params, q, k, val)
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
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    dtype = torch.float64 if args.precision == "f64" else torch.float32
    sizes = [int(x) for x in args.n.split(",") if x]
    results = []
    for op in args.op:
        for n in sizes:
            entry = {"op": op, "n": n}
            try:
                family, params = ref.parse_operator(op)
                seconds = time_operator(family, params, n, args.d, args.repeats, dtype, args.seed)
                entry.update(median_seconds=statistics.median(seconds), seconds=seconds)
            except ValueError as e:
                entry["error"] = str(e)
            results.append(entry)
    print(json.dumps({"implementation": "pytorch-reference", "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "precision": args.precision, "d": args.d,
                      "repeats": args.repeats, "results": results}))


if __name__ == "__main__":
    main()
