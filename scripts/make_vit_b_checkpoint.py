#!/usr/bin/python3
"""Writes a ViT-B/16-shaped checkpoint with random weights, for measuring how TransportLens opens models of the
size researchers use (`tlens bench --load`, README.md#opening-large-checkpoints). Never commit its output:
it is 346 MB per weights file.

    /usr/bin/python3 scripts/make_vit_b_checkpoint.py --out checkpoints/vit-b16   # /checkpoints/ is git-ignored

OUT/config.json        Hugging Face ViTForImageClassification config: 224×224 images, 16×16 patches (197 tokens),
                       hidden size 768, 12 layers, 12 heads, MLP 3072, 1000 classes ("class 000" … "class 999")
OUT/model.safetensors  the weights, float32 (written by hand: Debian has no safetensors package)
OUT/pytorch_model.bin  the same weights, torch.save(model.state_dict())

The model is scripts/reference/make_vit_fixtures.py's HfViT (plain torch.nn in Hugging Face names) with torch's
default initialisation under a fixed seed, so the two weight files hold identical tensors.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
import fixture_io as fx  # noqa: E402
from make_vit_fixtures import HfViT, base, hf_config  # noqa: E402

LABELS = 1000


def vit_b16():
    """ViT-B/16 (Dosovitskiy et al., table 1) with ImageNet's 1000 classes, as HF's google/vit-base-patch16-224."""
    return base(image=224, patch=16, channels=3, dim=768, depth=12, heads=12, head_dim=64, mlp=3072, labels=LABELS,
                block=False, label_names=[f"class {i:03d}" for i in range(LABELS)])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder to write (created when missing)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    started = time.time()
    torch.manual_seed(args.seed)
    cfg = vit_b16()
    model = HfViT(cfg).eval()
    state = model.state_dict()
    parameters = sum(t.numel() for t in state.values())
    os.makedirs(args.out, exist_ok=True)
    fx.write_json(os.path.join(args.out, "config.json"), hf_config(cfg), indent=2)
    fx.write_safetensors(os.path.join(args.out, "model.safetensors"), state, {"format": "pt"})
    torch.save(state, os.path.join(args.out, "pytorch_model.bin"))
    print(f"wrote {args.out}: {parameters / 1e6:.1f}M parameters, "
          f"{os.path.getsize(os.path.join(args.out, 'model.safetensors')) / 1e6:.0f} MB per weights file, "
          f"in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
