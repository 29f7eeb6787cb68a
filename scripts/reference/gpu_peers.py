#!/usr/bin/env python3
"""Peer timings beside `tlens bench --device cuda`, on the same GPU in the same run: published Sinkhorn-attention code.

For B=1, H=32, d=64, T=10 single normalisations (rows first) and n in {1024, 4096, 16384, 65536} (--n), float32
inputs (torch.randn, fixed seeds), CUDA events, one warm-up (which also compiles Triton kernels), then the median
of up to --repeats timed runs (fewer when a run is long). Peers are imported unchanged from --peers (default: the
TL_PEERS_DIR environment variable), a folder holding
  sinkformers/vit-pytorch/vit_pytorch/sinkhorn.py   (michaelsdr/sinkformers)
  flash-sinkhorn/src/flash_sinkhorn/                (ot-triton-lab/flash-sinkhorn)
A peer that cannot be imported is recorded as unavailable, with the reason; nothing fails.

1. Sinkformers: SinkhornDistance(eps=1, max_iter=10) on the scores c = QKᵀ/√d, shape [B·H, n, n], as its
   vit.py:Attention calls it. One of its iterations i forms M = (c + u_i + v_j)/eps densely (n×n), then for even
   i updates u ← eps·(log μ − logsumexp_j M) + u (a row normalisation), for odd i v ← eps·(log ν − logsumexp_i M)
   + v (a column normalisation), and calls err.item() (a host synchronisation; the threshold test never stops it
   early here). So max_iter = 10 is exactly T = 10 single normalisations, rows first; it then returns the dense
   plan pi = exp(M). Timed: sinkhorn_ms (SinkhornDistance alone) and attention_ms (vit.py's whole step:
   dots = QKᵀ/√d, SinkhornDistance, attn = pi·n, attn @ V, the same outputs as our fused output path). It has no
   matrix product inside, so TF32 only affects attention_ms; that is timed with matmul TF32 off and on.
   Sizes whose n×n tensors do not fit are recorded as "oom".
2. FlashSinkhorn: sinkhorn_flashstyle_alternating(x, y, a, b, eps, n_iters=10) on one head (x = q, y = k,
   [n, d]), balanced uniform a = b = 1/n, allow_tf32 False and True, autotune=False (its own default block
   sizes: autotuning compiles and times 44 configurations per size and precision, minutes per run; --autotune to
   allow it). It solves OT with cost ‖x − y‖²: for balanced marginals that differs from the attention score
   −q·k only by row and column terms the potentials absorb, so the time per iteration at the same n, d is
   comparable; eps = 2√d makes its exponent scale 2·x·y/eps equal q·k/√d. One of its iterations is two LSE
   passes (f then g), i.e. two single normalisations: T = 10 is 5 iterations. It has no batch dimension:
   heads32_T10_ms is measured as 32 heads one after the other (5 iterations each) where n ≤ 4096, and
   heads32_T10_estimated_ms = 32 · 5 · per_iteration_ms is given for every n.
Output: JSON Lines on stdout, one object per measurement, flushed as soon as it is taken (a killed run keeps
what it measured); the first line describes the run. Total time is capped by --budget-s (default 120 s):
a measurement predicted (from the same peer at the previous n, scaled by n²) to overrun it is recorded as
skipped.
"""
import argparse
import contextlib
import importlib.util
import io
import json
import math
import os
import sys
import time
import traceback

T_STEPS = 10
OUT = sys.stdout  # the JSON lines; what the peers print goes to stderr


def emit(record):
    print(json.dumps(record), file=OUT, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--peers", default=os.environ.get("TL_PEERS_DIR", ""))
    parser.add_argument("--n", default="1024,4096,16384,65536")
    parser.add_argument("--H", type=int, default=32)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--autotune", action="store_true", help="let FlashSinkhorn autotune (slow)")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="check this script without a GPU: CPU tensors, wall-clock timers (use small --n)")
    args = parser.parse_args()
    start = time.monotonic()
    deadline = start + args.budget_s
    ns = [int(s) for s in args.n.split(",")]

    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure is a reason to record
        emit({"kind": "run", "error": f"torch not importable: {e!r}"})
        return 0
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        emit({"kind": "run", "error": "no CUDA device visible to torch"})
        return 0
    device = "cuda" if cuda else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def release():
        sync()
        if cuda:
            torch.cuda.empty_cache()

    peers = os.path.abspath(args.peers) if args.peers else ""
    sinkformers_file = os.path.join(peers, "sinkformers", "vit-pytorch", "vit_pytorch", "sinkhorn.py")
    flash_src = os.path.join(peers, "flash-sinkhorn", "src")
    emit({"kind": "run", "torch": torch.__version__, "device": torch.cuda.get_device_name(0) if cuda else "cpu (smoke)",
          "peers_dir": peers or None, "B": 1, "H": args.H, "d": args.d, "T": T_STEPS, "n": ns,
          "budget_s": args.budget_s})

    def available(peer, reason):
        emit({"kind": "peer", "peer": peer, "available": reason is None, "reason": reason})
        return reason is None

    sinkhorn_distance = None
    reason = None
    if not peers:
        reason = "no peers folder given (--peers or TL_PEERS_DIR)"
    elif not os.path.isfile(sinkformers_file):
        reason = f"{sinkformers_file} not found"
    else:
        try:
            spec = importlib.util.spec_from_file_location("sinkformers_sinkhorn", sinkformers_file)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sinkhorn_distance = module.SinkhornDistance
        except Exception as e:  # noqa: BLE001
            reason = f"import failed: {e!r}"
    have_sinkformers = available("sinkformers", reason)

    flash_alternating = None
    reason = None
    if not peers:
        reason = "no peers folder given (--peers or TL_PEERS_DIR)"
    elif not os.path.isdir(os.path.join(flash_src, "flash_sinkhorn")):
        reason = f"{flash_src}/flash_sinkhorn not found"
    elif not cuda:
        reason = "needs CUDA and Triton (CPU smoke run)"
    else:
        try:
            sys.path.insert(0, flash_src)
            from flash_sinkhorn.sinkhorn_solvers import sinkhorn_flashstyle_alternating as flash_alternating
        except Exception as e:  # noqa: BLE001
            reason = f"import failed: {e!r}"
    have_flash = available("flash-sinkhorn", reason)

    def once_ms(fn):
        if not cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        return begin.elapsed_time(end)

    def time_ms(fn, repeats):
        """Warm-up, then up to `repeats` timed runs (fewer when one run is long): (median, min, count, warm-up)."""
        warm = once_ms(fn)
        count = max(1, min(repeats, int(6000.0 / max(warm, 1e-3))))
        times = sorted(once_ms(fn) for _ in range(count))
        return times[len(times) // 2], times[0], count, warm

    last_cost = {}  # peer -> (n, seconds the measurement took)

    def measure(peer, n, record, work):
        """Runs work() -> dict of results unless the time budget forbids; emits the record either way."""
        now = time.monotonic()
        if peer in last_cost:
            prev_n, prev_s = last_cost[peer]
            predicted = prev_s * (n / prev_n) ** 2
            if now + predicted > deadline:
                record.update({"skipped": "time budget", "predicted_s": round(predicted, 1),
                               "left_s": round(deadline - now, 1)})
                emit(record)
                return
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                record.update(work())
        except torch.cuda.OutOfMemoryError as e:
            record.update({"oom": True, "error": str(e).splitlines()[0][:200]})
        except RuntimeError as e:
            if "out of memory" in str(e):
                record.update({"oom": True, "error": str(e).splitlines()[0][:200]})
            else:
                record.update({"error": repr(e)[:300], "trace": traceback.format_exc(limit=3)[-600:]})
        finally:
            release()
            if printed.getvalue():
                sys.stderr.write(printed.getvalue())
                record["printed"] = printed.getvalue()[-200:]  # e.g. Sinkformers' 'breaking' (stopped early)
        took = time.monotonic() - now
        record["wall_s"] = round(took, 2)
        if not record.get("oom") and "error" not in record:
            last_cost[peer] = (n, took)
        emit(record)

    for n in ns:
        gen = torch.Generator(device=device).manual_seed(n)
        q, k, v = (torch.randn(1, args.H, n, args.d, device=device, generator=gen) for _ in range(3))

        if have_sinkformers:
            def sinkformers_work():
                # The scores, their negation and the modified cost M are n×n per head at once, at least.
                need = 3 * args.H * n * n * 4
                free = torch.cuda.mem_get_info()[0] if cuda else float("inf")
                if need > free:
                    return {"oom": True, "predicted": True, "needed_gib": round(need / 2**30, 1),
                            "free_gib": round(free / 2**30, 1)}
                sink = sinkhorn_distance(eps=1, max_iter=T_STEPS)
                out = {}
                dots = (q @ k.transpose(-1, -2) * args.d ** -0.5).view(-1, n, n)
                med, mn, count, warm = time_ms(lambda: sink(dots), args.repeats)
                out.update({"sinkhorn_ms": med, "sinkhorn_min_ms": mn, "repeats": count, "warmup_ms": warm})
                del dots

                def attention():  # vit_pytorch/vit.py Attention.forward between qkv and the output projection
                    d = torch.matmul(q, k.transpose(-1, -2)) * args.d ** -0.5
                    shape = d.shape
                    attn = sink(d.view(-1, shape[2], shape[3]))[0]
                    attn = attn * attn.shape[-1]
                    return torch.matmul(attn.view(shape), v)

                for tf32 in (False, True):
                    key = "attention_tf32_ms" if tf32 else "attention_ms"
                    torch.backends.cuda.matmul.allow_tf32 = tf32
                    try:
                        med, mn, count, _ = time_ms(attention, args.repeats)
                        out.update({key: med, key.replace("_ms", "_min_ms"): mn})
                    except torch.cuda.OutOfMemoryError:
                        out[key] = "oom"
                    finally:
                        torch.backends.cuda.matmul.allow_tf32 = False
                        release()
                return out

            measure("sinkformers", n, {"kind": "measurement", "peer": "sinkformers", "n": n, "H": args.H,
                                       "d": args.d, "T": T_STEPS, "max_iter": T_STEPS, "eps": 1.0,
                                       "batch_shape": [args.H, n, n], "dtype": "float32",
                                       "matmul_tf32": "attention_ms off, attention_tf32_ms on"},
                    sinkformers_work)

        if have_flash:
            for tf32 in (False, True):
                def flash_work(tf32=tf32):
                    x = q[0, 0].contiguous()
                    y = k[0, 0].contiguous()
                    a = torch.full((n,), 1.0 / n, device="cuda")
                    eps = 2.0 * math.sqrt(args.d)

                    def solve(x=x, y=y):
                        return flash_alternating(x, y, a, a, eps=eps, n_iters=T_STEPS, allow_tf32=tf32,
                                                 autotune=args.autotune)

                    med, mn, count, warm = time_ms(solve, args.repeats)
                    out = {"per_head_10_iters_ms": med, "per_head_10_iters_min_ms": mn, "repeats": count,
                           "warmup_ms": warm, "per_iteration_ms": med / T_STEPS,
                           "per_single_normalisation_ms": med / (2 * T_STEPS),
                           "heads32_T10_estimated_ms": args.H * (T_STEPS // 2) * med / T_STEPS}
                    if n <= 4096:
                        heads = [(q[0, h].contiguous(), k[0, h].contiguous()) for h in range(args.H)]

                        def all_heads():
                            for xh, yh in heads:
                                flash_alternating(xh, yh, a, a, eps=eps, n_iters=T_STEPS // 2, allow_tf32=tf32,
                                                  autotune=args.autotune)

                        med, mn, _, _ = time_ms(all_heads, args.repeats)
                        out.update({"heads32_T10_ms": med, "heads32_T10_min_ms": mn})
                    return out

                measure(f"flash-sinkhorn-tf32-{tf32}", n,
                        {"kind": "measurement", "peer": "flash-sinkhorn", "n": n, "d": args.d, "heads": 1,
                         "n_iters": T_STEPS, "allow_tf32": tf32, "autotune": args.autotune, "use_exp2": True,
                         "marginals": "uniform 1/n", "eps": 2.0 * math.sqrt(args.d), "dtype": "float32"},
                        flash_work)
        del q, k, v
        release()

    emit({"kind": "done", "wall_s": round(time.monotonic() - start, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
