#!/usr/bin/python3
"""Times opening a ViT checkpoint in PyTorch and running one image, and prints JSON on stdout: the PyTorch side of
`tlens bench --load` (app/cli/load_bench.cpp), run by it in the same invocation on the same machine.

    /usr/bin/python3 scripts/reference/load_reference.py --checkpoint FILE --repeats 3 --threads 2

What is timed, after one untimed warm-up (so both sides read the file from the page cache):
  load     reading the weights (torch.load for a torch.save file; for model.safetensors the file memory-mapped and
           each tensor viewed in place, as the safetensors package does, since Debian has no such package), building
           the model (make_vit_fixtures.py's HfViT: plain torch.nn in Hugging Face names, default initialisation) from
           the config.json beside the file, and load_state_dict;
  forward  one 224×224 image (uniform pixels) through the loaded model under torch.no_grad.
The median of `repeats` runs of each is reported.
"""
import argparse
import json
import mmap
import os
import statistics
import struct
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_vit_fixtures import HfViT, Normaliser, base  # noqa: E402

SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    """name → tensor viewing the memory-mapped file (no copy until load_state_dict copies into the parameters)."""
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (header_bytes,) = struct.unpack("<Q", mapped[:8])
    header = json.loads(mapped[8:8 + header_bytes])
    header.pop("__metadata__", None)
    start = 8 + header_bytes
    tensors = {}
    with warnings.catch_warnings():  # a read-only mapping is fine: the tensors are only read
        warnings.simplefilter("ignore")
        for name, entry in header.items():
            dtype = np.dtype(SAFETENSORS_DTYPES[entry["dtype"]])
            begin, end = entry["data_offsets"]
            array = np.frombuffer(mapped, dtype=dtype, count=(end - begin) // dtype.itemsize, offset=start + begin)
            tensors[name] = torch.from_numpy(array).view(entry["shape"])
    return tensors


def model_config(path):
    """make_vit_fixtures.py's config dict from a Hugging Face config.json."""
    with open(path) as f:
        c = json.load(f)
    return base(image=c["image_size"], patch=c["patch_size"], channels=c.get("num_channels", 3), dim=c["hidden_size"],
                depth=c["num_hidden_layers"], heads=c["num_attention_heads"],
                head_dim=c["hidden_size"] // c["num_attention_heads"], mlp=c["intermediate_size"],
                labels=len(c["id2label"]), ln_eps=c.get("layer_norm_eps", 1e-12), act=c.get("hidden_act", "gelu"),
                qkv_bias=c.get("qkv_bias", True))


def load(checkpoint, cfg):
    state = read_safetensors(checkpoint) if checkpoint.endswith(".safetensors") else torch.load(checkpoint, map_location="cpu")
    model = HfViT(cfg)
    model.load_state_dict(state)
    for m in model.modules():
        if isinstance(m, Normaliser):
            m.compact = True  # all heads in one batched softmax, as any PyTorch ViT runs them
    return model.eval()


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="model.safetensors or a torch.save file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = model_config(os.path.join(os.path.dirname(os.path.abspath(args.checkpoint)), "config.json"))
    pixels = torch.rand(1, cfg["channels"], cfg["image"], cfg["image"], generator=torch.Generator().manual_seed(0))

    load(args.checkpoint, cfg)  # warm-up: the file in the page cache, allocator and threads started
    load_seconds, forward_seconds = [], []
    for _ in range(args.repeats):
        seconds, model = timed(lambda: load(args.checkpoint, cfg))
        load_seconds.append(seconds)
        with torch.no_grad():
            seconds, _ = timed(lambda: model(pixels))
        forward_seconds.append(seconds)
        del model
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "checkpoint": args.checkpoint,
                      "parameters": sum(p.numel() for p in load(args.checkpoint, cfg).parameters()),
                      "load_seconds": load_seconds, "load_median_seconds": statistics.median(load_seconds),
                      "forward_seconds": forward_seconds, "forward_median_seconds": statistics.median(forward_seconds)}))


if __name__ == "__main__":
    main()
