#!/usr/bin/env python3
"""Reference timings beside `tlens bench --device cuda`, on the same GPU in the same run (PyTorch on the GPU machine).

Times, for B=1, H=32, d=64 and n in {1024, 4096, 16384, 65536} (override with --n):
  - sdpa_fp32_ms: torch.nn.functional.scaled_dot_product_attention on float32 inputs, TF32 off (the target of
    the fused softmax: within 1.5x);
  - sinkhorn_dense_ms: a plain dense log-domain Sinkhorn in PyTorch (T single normalisations, rows first, then
    O = A V), float32, only where the n x n scores fit in memory;
  - lotformer_ms (with --lot-r): LOTFormer's factored formulation in PyTorch, a reformulation of its published
    algorithm (its code has no licence to copy): the n x r scores of queries against r pivots and of the pivots
    against the keys, each solved by --lot-T log-domain normalisations, then O = n P1 (diag(1/w) (P2 V)),
    float32, uniform pivot masses, random pivots.
Median of `repeats` after one warm-up, CUDA events. Prints one JSON object.
"""
import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F


def time_ms(fn, repeats):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def dense_sinkhorn(q, k, v, T, eps):
    n_q, n_k = q.shape[-2], k.shape[-2]
    x = (q @ k.transpose(-1, -2)) / (math.sqrt(q.shape[-1]) * eps)
    log_mu, log_nu = -math.log(n_q), -math.log(n_k)
    u = torch.zeros(x.shape[:-1], device=x.device)
    w = torch.zeros(x.shape[:-2] + (n_k,), device=x.device)
    for t in range(1, T + 1):
        if t % 2:
            u = log_mu - torch.logsumexp(x + w[..., None, :], dim=-1)
        else:
            w = log_nu - torch.logsumexp(x + u[..., :, None], dim=-2)
    return (n_q * torch.exp(x + u[..., :, None] + w[..., None, :])) @ v


def lotformer(q, k, v, z, T, eps):
    n_q, n_k, r = q.shape[-2], k.shape[-2], z.shape[-2]
    scale = 1.0 / (math.sqrt(q.shape[-1]) * eps)
    x1 = (q @ z.transpose(-1, -2)) * scale  # queries x pivots
    x2 = (z @ k.transpose(-1, -2)) * scale  # pivots x keys
    log_w = -math.log(r)

    def solve(x, log_a, log_b):
        u = torch.zeros(x.shape[:-1], device=x.device)
        w = torch.zeros(x.shape[:-2] + (x.shape[-1],), device=x.device)
        for t in range(1, T + 1):
            if t % 2:
                u = log_a - torch.logsumexp(x + w[..., None, :], dim=-1)
            else:
                w = log_b - torch.logsumexp(x + u[..., :, None], dim=-2)
        return torch.exp(x + u[..., :, None] + w[..., None, :])

    p1 = solve(x1, -math.log(n_q), log_w)
    p2 = solve(x2, log_w, -math.log(n_k))
    return n_q * (p1 @ ((p2 @ v) * r))  # diag(1/w) = r for uniform masses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", default="1024,4096,16384,65536")
    parser.add_argument("--H", type=int, default=32)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--T", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lot-r", type=int, default=0, help="pivots of the LOTFormer formulation (0: not timed)")
    parser.add_argument("--lot-T", type=int, default=5)
    parser.add_argument("--lot-eps", type=float, default=1.0)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    runs = []
    free, _ = torch.cuda.mem_get_info()
    for n in [int(s) for s in args.n.split(",")]:
        q, k, v = (torch.randn(1, args.H, n, args.d, device="cuda") for _ in range(3))
        run = {"B": 1, "H": args.H, "n": n, "d": args.d, "T": args.T}
        run["sdpa_fp32_ms"] = time_ms(lambda: F.scaled_dot_product_attention(q, k, v), args.repeats)
        if 4 * args.H * n * n * 4 < 0.8 * free:  # scores, their exp and temporaries
            run["sinkhorn_dense_ms"] = time_ms(lambda: dense_sinkhorn(q, k, v, args.T, 1.0), args.repeats)
        if args.lot_r:
            z = torch.randn(1, args.H, args.lot_r, args.d, device="cuda")
            run["lot"] = {"r": args.lot_r, "T": args.lot_T, "eps": args.lot_eps}
            run["lotformer_ms"] = time_ms(lambda: lotformer(q, k, v, z, args.lot_T, args.lot_eps), args.repeats)
        runs.append(run)
        print(json.dumps(run), flush=True, file=sys.stderr)  # progress
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "tf32": False,
                      "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
