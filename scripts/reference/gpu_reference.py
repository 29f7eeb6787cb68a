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
    float32, uniform pivot masses, random pivots;
  - espformer_dense_ms (with --esp-L): ESPFormer's dense per-slice plans (espformer_dense below), a
    reformulation of its published algorithm (its code has no licence to copy), float32, L random unit
    directions, p = 2, tau = --esp-tau; heads in groups of as many as fit in memory, one after another (all
    in one timed span), refused where a single head's [L, n, n] plans do not fit.
Median of `repeats` after one warm-up, CUDA events. Prints one JSON object.

`--check-esp FIXTURE_DIR` instead checks espformer_dense in float64 on the CPU against a fixture of the tool's
ESP (tests/fixtures/esp/<case>: q, k, v, output, weights for `esp` with the axis slicer; the C++ CPU ESP
matches those files to 1e-10 in tests/reference/esp_reference_test.cpp) and prints the largest differences.
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


def espformer_dense(q, k, v, theta, tau):
    """ESPFormer's hard ESP as its published code computes it, densely (q, k: [B, H, n, d], v: [B, H, n, d_v],
    theta: [L, d] unit directions): per slice project and sort queries and keys (argsort along the tokens),
    build the slice's plan as a dense one-hot matrix, all slices at once as [B, H, L, n, n], score each plan
    against the dense cost matrix C_ij = ||q_i - k_j||^2 (D_l = <C, U_l>), weight the slices by
    softmax(-tau D) and apply the weighted plan to V (einsum). The tool's conventions: U_l = P_l / n (plan
    scale), A = n sum_l w_l U_l (rows sum to 1). Equal sizes only (n_q = n_k: the rank coupling is the
    identity); ties are broken by the sort, as in the published code."""
    n = q.shape[-2]
    order_q = torch.argsort(q @ theta.T, dim=-2).transpose(-1, -2)  # [B, H, L, n]: query of each rank
    order_k = torch.argsort(k @ theta.T, dim=-2).transpose(-1, -2)  # key of each rank
    plans = torch.zeros(order_q.shape + (n,), dtype=q.dtype, device=q.device)  # [B, H, L, n, n]
    # P_l[order_q[r], order_k[r]] = 1: rank r's query goes to rank r's key.
    match = torch.empty_like(order_k)
    match.scatter_(-1, order_q, order_k)  # key matched to each query
    plans.scatter_(-1, match.unsqueeze(-1), 1.0)
    cost = torch.cdist(q, k) ** 2  # [B, H, n, n]
    costs = (plans * cost.unsqueeze(2)).sum(dim=(-1, -2)) / n  # D_l, [B, H, L]
    weights = torch.softmax(-tau * costs, dim=-1)
    attention = torch.einsum("bhl,bhlij->bhij", weights, plans)  # n sum_l w_l U_l with U_l = P_l / n
    return torch.einsum("bhij,bhjd->bhid", attention, v), weights


def espformer_groups(H, n, L, free):
    """Heads per group for espformer_dense (its [L, n, n] plans, their product with C, the n x n cost and
    attention, float32), or None when one head does not fit."""
    per_head = 4 * (2 * L + 3) * n * n
    fit = int(0.8 * free // per_head)
    return min(H, fit) if fit >= 1 else None


def check_esp(fixture):
    """espformer_dense in float64 on the CPU against a fixture of the tool's ESP (axis slicer)."""
    import numpy as np
    q, k, v = (torch.from_numpy(np.load(f"{fixture}/{name}.npy")).double()[None, None] for name in "qkv")
    theta = torch.eye(q.shape[-1], dtype=torch.float64)
    cases = json.load(open(f"{fixture}/../cases.json"))["cases"]
    op = next(c["op"] for c in cases if c["name"] == fixture.rstrip("/").split("/")[-1])
    tau = float(dict(kv.split("=") for kv in op.partition(":")[2].split(",") if kv).get("tau", 0.1))
    output, weights = espformer_dense(q, k, v, theta, tau)
    expected_output = torch.from_numpy(np.load(f"{fixture}/output.npy"))
    expected_weights = torch.from_numpy(np.load(f"{fixture}/weights.npy")).reshape(-1)
    print(json.dumps({"fixture": fixture, "op": op,
                      "output_max_abs_diff": float((output[0, 0] - expected_output).abs().max()),
                      "weights_max_abs_diff": float((weights[0, 0] - expected_weights).abs().max())}))


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
    parser.add_argument("--esp-L", type=int, default=0, help="slices of the ESPFormer formulation (0: not timed)")
    parser.add_argument("--esp-tau", type=float, default=0.1)
    parser.add_argument("--check-esp", default="", help="fixture folder: check espformer_dense on the CPU")
    args = parser.parse_args()
    if args.check_esp:
        check_esp(args.check_esp)
        return
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
        if args.esp_L:
            run["esp"] = {"L": args.esp_L, "tau": args.esp_tau}
            groups = espformer_groups(args.H, n, args.esp_L, free)
            if groups is None:
                run["espformer_dense_ms"] = None
                run["espformer_refused"] = (f"one head's [L, n, n] plans need {4 * (2 * args.esp_L + 3) * n * n / 2**30:.1f}"
                                            f" GiB, the GPU has {free / 2**30:.1f} GiB free")
            else:
                theta = torch.nn.functional.normalize(torch.randn(args.esp_L, args.d, device="cuda"), dim=1)
                run["espformer_heads_per_group"] = groups
                run["espformer_dense_ms"] = time_ms(
                    lambda: [espformer_dense(q[:, h:h + groups], k[:, h:h + groups], v[:, h:h + groups], theta,
                                             args.esp_tau) for h in range(0, args.H, groups)], args.repeats)
        runs.append(run)
        print(json.dumps(run), flush=True, file=sys.stderr)  # progress
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "tf32": False,
                      "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
