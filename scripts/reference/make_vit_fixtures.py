#!/usr/bin/python3
"""Writes the committed ViT fixtures to tests/fixtures/vit/: tiny trained-looking models, fixed images and
their logits, so the C++ model (core/model/vit.cpp) is checked against an independent PyTorch forward pass
and every checkpoint format it reads.

    /usr/bin/python3 scripts/reference/make_vit_fixtures.py [--out tests/fixtures/vit]

Two model layouts, both written here in plain torch.nn (no transformers, no einops):
  * Hugging Face ViTForImageClassification names (vit.embeddings..., vit.encoder.layer.{i}..., classifier),
    with the normaliser taken from the references of this folder (attention_reference.py, esp_reference.py,
    lot_reference.py) per image and head;
  * lucidrains/vit-pytorch as the Sinkformer/ESPFormer code used it (Rearrange + Linear patch embedding,
    PreNorm blocks, fused bias-free to_qkv, mlp_head = LayerNorm + Linear).

Cases (folder: files):
  hf_softmax/          config.json (plain HF), preprocessor_config.json, model.safetensors, torchscript.pt
                       (torch.jit.trace; TorchScript archives are ~70 KB even for this model, so only one)
  hf_sinkhorn_T4/      config.json with a transportlens block (sinkhorn:T=4,eps=0.5, head_dim 6 so heads·head_dim
                       != hidden, no qkv bias, gelu_pytorch_tanh, mean pooling), model.safetensors
  hf_esp/              esp:tau=1 (hard sort), model.safetensors
  hf_lot/              lot:r=3,T=5 with learned pivots (…attention.attention.normaliser.pivots / mass_logits)
  vitpytorch_sinkhorn/ sinkhorn:T=3 (Sinkformer), state_dict.pt = torch.save(model.state_dict()) (OrderedDict),
                       state_dict_dict.pt = torch.save(dict(...)), side.json
  vitpytorch_mean/     heads = 1 and dim_head = dim (to_out is nn.Identity), pool='mean', one channel, weights as a
                       single vit-pytorch-named model.safetensors, side.json
Each folder also holds images.npy (B×C×H×W float32 pixels in [0, 1]) and logits.npy (B×labels, float64): the
logits of the model evaluated in float64 on the images normalised with the case's image_mean/image_std.
safetensors files are written by hand (8-byte header length, JSON header, raw little-endian data).
"""
import copy
import math
import os
import sys
from collections import OrderedDict

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_reference as attn_ref  # noqa: E402
import esp_reference as esp_ref  # noqa: E402
import fixture_io as fx  # noqa: E402
import lot_reference as lot_ref  # noqa: E402

# hf_softmax/torchscript.pt records the absolute path of this file and the line of every traced module below, so
# moving these lines, or running from another checkout folder, changes that one file (the others do not depend on it).
IMAGES = 3


# ---------------------------------------------------------------------------------------------------------
# Normalisers: per image and head, from the references (one sequence at a time, n×d).

class Normaliser(nn.Module):
    """Maps q, k, v [B, H, n, d] to A V, head by head, through a reference implementation."""

    def __init__(self, op, heads=0, head_dim=0):
        super().__init__()
        self.family, _, _ = op.partition(":")
        self.op = op
        if self.family == "lot":
            self.params = dict(item.split("=") for item in op.partition(":")[2].split(","))
            r = int(self.params["r"])
            self.pivots = nn.Parameter(0.6 * torch.randn(heads, r, head_dim))
            self.mass_logits = nn.Parameter(0.5 * torch.randn(heads, r))
        self.min_gap = math.inf  # ESP: smallest gap between sorted projections seen (float32 safety)
        self.compact = False  # set while tracing: a batched softmax/Sinkhorn keeps the TorchScript file small

    def batched(self, q, k, v):
        family, params = attn_ref.parse_operator(self.op)
        budget, eps = (1, 1.0) if family == "softmax" else (params["T"], params["eps"])
        x = q @ k.transpose(-1, -2) / (math.sqrt(q.shape[-1]) * eps)
        log_marginal = -math.log(q.shape[-2])
        u, w = torch.zeros_like(x[..., 0]), torch.zeros_like(x[..., 0, :])
        for t in range(1, budget + 1):
            if t % 2 == 1:
                u = log_marginal - torch.logsumexp(x + w[..., None, :], -1)
            else:
                w = log_marginal - torch.logsumexp(x + u[..., :, None], -2)
        return q.shape[-2] * torch.exp(x + u[..., :, None] + w[..., None, :]) @ v

    def one_head(self, q, k, v, h):
        if self.family in ("softmax", "sinkhorn"):
            family, params = attn_ref.parse_operator(self.op)
            return attn_ref.run_operator(family, params, q, k, v).output
        if self.family == "esp":
            for x in (q, k):
                for column in x.T:
                    self.min_gap = min(self.min_gap, float(column.sort().values.diff().min()))
            return esp_ref.esp_attention(q, k, v, **esp_ref.parse_esp(self.op)).output.to(q.dtype)
        return lot_ref.lot_attention(q, k, v, pivots=self.pivots[h].to(q.dtype), mass_logits=self.mass_logits[h].to(q.dtype),
                                     eps=float(self.params["eps"]), budget=int(self.params["T"])).output

    def forward(self, q, k, v):
        if self.compact:
            return self.batched(q, k, v)
        return torch.stack([torch.stack([self.one_head(q[b, h], k[b, h], v[b, h], h) for h in range(q.shape[1])])
                            for b in range(q.shape[0])])


# ---------------------------------------------------------------------------------------------------------
# Hugging Face layout

class Dense(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        inner = cfg["heads"] * cfg["head_dim"]
        self.heads, self.head_dim = cfg["heads"], cfg["head_dim"]
        self.query = nn.Linear(cfg["dim"], inner, bias=cfg["qkv_bias"])
        self.key = nn.Linear(cfg["dim"], inner, bias=cfg["qkv_bias"])
        self.value = nn.Linear(cfg["dim"], inner, bias=cfg["qkv_bias"])
        self.normaliser = Normaliser(cfg["attention"], cfg["heads"], cfg["head_dim"])

    def forward(self, x):
        b, n, _ = x.shape

        def split(t):
            return t.view(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)

        out = self.normaliser(split(self.query(x)), split(self.key(x)), split(self.value(x)))
        return out.permute(0, 2, 1, 3).reshape(b, n, -1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention = SelfAttention(cfg)
        self.output = Dense(cfg["heads"] * cfg["head_dim"], cfg["dim"])


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(cfg["dim"], eps=cfg["ln_eps"])
        self.attention = Attention(cfg)
        self.layernorm_after = nn.LayerNorm(cfg["dim"], eps=cfg["ln_eps"])
        self.intermediate = Dense(cfg["dim"], cfg["mlp"])
        self.output = Dense(cfg["mlp"], cfg["dim"])
        self.approximate = "tanh" if cfg["act"] != "gelu" else "none"

    def forward(self, x):
        h = x + self.attention.output.dense(self.attention.attention(self.layernorm_before(x)))
        act = nn.functional.gelu(self.intermediate.dense(self.layernorm_after(h)), approximate=self.approximate)
        return h + self.output.dense(act)


class PatchEmbeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.projection = nn.Conv2d(cfg["channels"], cfg["dim"], cfg["patch"], stride=cfg["patch"])


class Embeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        n = (cfg["image"] // cfg["patch"]) ** 2 + 1
        self.cls_token = nn.Parameter(torch.randn(1, 1, cfg["dim"]))
        self.position_embeddings = nn.Parameter(torch.randn(1, n, cfg["dim"]))
        self.patch_embeddings = PatchEmbeddings(cfg)

    def forward(self, pixels):
        patches = self.patch_embeddings.projection(pixels).flatten(2).transpose(1, 2)
        return torch.cat([self.cls_token.expand(pixels.shape[0], -1, -1), patches], 1) + self.position_embeddings


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layer = nn.ModuleList([Layer(cfg) for _ in range(cfg["depth"])])


class Backbone(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embeddings = Embeddings(cfg)
        self.encoder = Encoder(cfg)
        self.layernorm = nn.LayerNorm(cfg["dim"], eps=cfg["ln_eps"])


class HfViT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.vit = Backbone(cfg)
        self.classifier = nn.Linear(cfg["dim"], cfg["labels"])
        self.mean_pool = cfg["pool"] == "mean"

    def forward(self, pixels):
        x = self.vit.embeddings(pixels)
        for layer in self.vit.encoder.layer:
            x = layer(x)
        pooled = self.vit.layernorm(x.mean(1)) if self.mean_pool else self.vit.layernorm(x)[:, 0]
        return self.classifier(pooled)


# ---------------------------------------------------------------------------------------------------------
# vit-pytorch layout (the version the Sinkformer code ships)

class Rearrange(nn.Module):
    """'b c (h p1) (w p2) -> b (h w) (p1 p2 c)' without einops."""

    def __init__(self, patch):
        super().__init__()
        self.patch = patch

    def forward(self, x):
        b, c, height, width = x.shape
        p = self.patch
        x = x.reshape(b, c, height // p, p, width // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, (height // p) * (width // p), p * p * c)


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.norm(x))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.0), nn.Linear(hidden, dim),
                                 nn.Dropout(0.0))

    def forward(self, x):
        return self.net(x)


class VpAttention(nn.Module):
    def __init__(self, dim, heads, dim_head, op):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.dim_head = heads, dim_head
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        project_out = not (heads == 1 and dim_head == dim)
        self.to_out = nn.Sequential(nn.Linear(inner, dim), nn.Dropout(0.0)) if project_out else nn.Identity()
        self.normaliser = Normaliser(op)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (t.view(b, n, self.heads, self.dim_head).permute(0, 2, 1, 3) for t in self.to_qkv(x).chunk(3, dim=-1))
        return self.to_out(self.normaliser(q, k, v).permute(0, 2, 1, 3).reshape(b, n, -1))


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([
            PreNorm(cfg["dim"], VpAttention(cfg["dim"], cfg["heads"], cfg["head_dim"], cfg["attention"])),
            PreNorm(cfg["dim"], FeedForward(cfg["dim"], cfg["mlp"]))]) for _ in range(cfg["depth"])])

    def forward(self, x):
        for attention, feed_forward in self.layers:
            x = attention(x) + x
            x = feed_forward(x) + x
        return x


class VpViT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        patch_dim = cfg["channels"] * cfg["patch"] ** 2
        n = (cfg["image"] // cfg["patch"]) ** 2
        self.to_patch_embedding = nn.Sequential(Rearrange(cfg["patch"]), nn.Linear(patch_dim, cfg["dim"]))
        self.pos_embedding = nn.Parameter(torch.randn(1, n + 1, cfg["dim"]))
        self.cls_token = nn.Parameter(torch.randn(1, 1, cfg["dim"]))
        self.transformer = Transformer(cfg)
        self.pool = cfg["pool"]
        self.mlp_head = nn.Sequential(nn.LayerNorm(cfg["dim"]), nn.Linear(cfg["dim"], cfg["labels"]))

    def forward(self, img):
        x = self.to_patch_embedding(img)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embedding
        x = self.transformer(x)
        return self.mlp_head(x.mean(dim=1) if self.pool == "mean" else x[:, 0])


# ---------------------------------------------------------------------------------------------------------
# Files (written with fixture_io: JSON, hand-written safetensors)

def hf_config(cfg):
    config = {
        "architectures": ["ViTForImageClassification"], "model_type": "vit", "hidden_size": cfg["dim"],
        "num_hidden_layers": cfg["depth"], "num_attention_heads": cfg["heads"], "intermediate_size": cfg["mlp"],
        "hidden_act": cfg["act"], "layer_norm_eps": cfg["ln_eps"], "image_size": cfg["image"],
        "patch_size": cfg["patch"], "num_channels": cfg["channels"], "qkv_bias": cfg["qkv_bias"],
        "id2label": {str(i): name for i, name in enumerate(cfg["label_names"])},
        "label2id": {name: i for i, name in enumerate(cfg["label_names"])},
    }
    if cfg.get("block"):
        config["transportlens"] = {"attention": cfg["attention"], "pool": cfg["pool"], "image_mean": cfg["mean"],
                                   "image_std": cfg["std"]}
        if cfg["heads"] * cfg["head_dim"] != cfg["dim"]:
            config["transportlens"]["head_dim"] = cfg["head_dim"]
    return config


def randomise(model):
    """Non-trivial LayerNorms and biases, so a wrongly mapped tensor changes the logits."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "layernorm" in name:
                p.add_(0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))


def normalised(images, cfg):
    mean = torch.tensor(cfg["mean"], dtype=torch.float64).view(-1, 1, 1)
    std = torch.tensor(cfg["std"], dtype=torch.float64).view(-1, 1, 1)
    return (images.double() - mean) / std


def reference_logits(model, images, cfg):
    wide = copy.deepcopy(model).double().eval()
    with torch.no_grad():
        logits = wide(normalised(images, cfg))
    for m in wide.modules():
        if isinstance(m, Normaliser) and m.family == "esp" and m.min_gap < 2e-5:
            raise SystemExit(f"{cfg['name']}: ESP projections {m.min_gap:.2e} apart; float32 could sort them differently")
    return logits


def make_case(out_dir, cfg, seed):
    torch.manual_seed(seed)
    folder = os.path.join(out_dir, cfg["name"])
    os.makedirs(folder, exist_ok=True)
    model = (HfViT if cfg["layout"] == "hf" else VpViT)(cfg).eval()
    randomise(model)
    images = torch.rand(IMAGES, cfg["channels"], cfg["image"], cfg["image"])
    logits = reference_logits(model, images, cfg)
    np.save(os.path.join(folder, "images.npy"), images.numpy().astype(np.float32))
    np.save(os.path.join(folder, "logits.npy"), logits.numpy())
    state = model.state_dict()
    for name in cfg["files"]:
        path = os.path.join(folder, name)
        if name == "config.json":
            fx.write_json(path, hf_config(cfg), indent=2)
        elif name == "preprocessor_config.json":
            fx.write_json(path, {"do_normalize": True, "do_rescale": True, "rescale_factor": 1 / 255,
                                 "image_mean": cfg["mean"], "image_std": cfg["std"],
                                 "image_processor_type": "ViTImageProcessor"}, indent=2)
        elif name == "side.json":
            fx.write_json(path, cfg["side"], indent=2)
        elif name == "model.safetensors":
            fx.write_safetensors(path, state, {"format": "pt"})
        elif name == "state_dict.pt":
            assert isinstance(state, OrderedDict)
            torch.save(state, path)
        elif name == "state_dict_dict.pt":
            torch.save(dict(state), path)
        elif name == "torchscript.pt":
            for m in model.modules():
                if isinstance(m, Normaliser):
                    m.compact = True
            traced = torch.jit.trace(model, normalised(images, cfg).float(), check_trace=False)
            if not torch.allclose(traced(normalised(images, cfg).float()).double(), logits, atol=1e-5):
                raise SystemExit(f"{cfg['name']}: the traced model does not reproduce the reference logits")
            traced.save(path)
        else:
            raise SystemExit(f"unknown fixture file {name}")
    print(f"{cfg['name']}: logits {logits.numpy().round(4).tolist()}")


def base(**overrides):
    cfg = dict(layout="hf", image=8, patch=4, channels=3, dim=16, depth=2, heads=2, head_dim=8, mlp=32, labels=3,
               ln_eps=1e-12, act="gelu", qkv_bias=True, pool="cls", attention="softmax", block=True,
               mean=[0.5, 0.4, 0.3], std=[0.25, 0.2, 0.3], label_names=["cat", "dog", "bird"],
               files=["config.json", "model.safetensors"])
    cfg.update(overrides)
    return cfg


CASES = [
    base(name="hf_softmax", block=False, files=["config.json", "preprocessor_config.json", "model.safetensors",
                                                 "torchscript.pt"]),
    base(name="hf_sinkhorn_T4", attention="sinkhorn:T=4,eps=0.5", head_dim=6, qkv_bias=False, act="gelu_pytorch_tanh",
         ln_eps=1e-6, pool="mean"),
    base(name="hf_esp", attention="esp:tau=1", depth=1),
    base(name="hf_lot", attention="lot:r=3,T=5,eps=1", depth=1),
    base(name="vitpytorch_sinkhorn", layout="vit-pytorch", attention="sinkhorn:T=3,eps=1", ln_eps=1e-5,
         files=["state_dict.pt", "state_dict_dict.pt", "side.json"],
         side={"heads": 2, "attention": "sinkhorn:T=3,eps=1", "labels": ["cat", "dog", "bird"],
               "image_mean": [0.5, 0.4, 0.3], "image_std": [0.25, 0.2, 0.3]}),
    base(name="vitpytorch_mean", layout="vit-pytorch", channels=1, heads=1, head_dim=16, pool="mean", ln_eps=1e-5,
         mean=[0.3], std=[0.4], files=["model.safetensors", "side.json"],
         side={"heads": 1, "patch_size": 4, "pool": "mean", "image_mean": 0.3, "image_std": 0.4}),
]


def main():
    args = fx.parse_args(__doc__, "vit")
    torch.set_num_threads(1)
    for seed, cfg in enumerate(CASES):
        make_case(args.out, cfg, 100 + seed)


if __name__ == "__main__":
    main()
