#!/usr/bin/python3
"""Writes the committed checkpoint-file fixtures to tests/fixtures/checkpoint_files/.

    /usr/bin/python3 scripts/reference/make_checkpoint_file_fixtures.py [--out tests/fixtures/checkpoint_files]

Files, each read by tests/core/model/torch_zip_test.cpp:
  state_dict.pt            torch.save(model.state_dict()) of a small module (an OrderedDict with _metadata),
                           plus float16 / bfloat16 (inf, nan, subnormals), int64, int32, uint8, bool, float64,
                           0-d and empty tensors, and views sharing one storage: transposed, offset window,
                           column stride 2, and a stride-0 broadcast.
  checkpoint_dict.pt       torch.save(dict(...)) of a training checkpoint: a nested state_dict, an optimizer
                           dict with int keys, a list of tensors, and non-tensor leaves of every plain type.
  state_dict_deflated.pt   state_dict.pt with every entry recompressed with deflate (PyTorch stores them).
  *_expected.safetensors   the tensors of the matching .pt, contiguous float32 (torch's own .float()),
                           written here by hand (struct + json, no safetensors package). Metadata: "stored.<name>"
                           gives each tensor's dtype in safetensors names; "skipped" lists the non-tensor leaves,
                           one per line, in file order.
Re-running gives byte-identical files.
"""
import collections
import math
import os
import sys
import zipfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_io as fx  # noqa: E402

SAFETENSORS_DTYPE = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL",
}


def state_dict():
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4))
    model.train()
    model(torch.randn(6, 5))  # moves running_mean / running_var / num_batches_tracked off their defaults
    sd = model.state_dict()
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.5 - 1.0
    sd["views.base"] = base
    sd["views.transposed"] = base.t()
    sd["views.window"] = base.view(-1)[5:11].view(2, 3)
    sd["views.every_other_column"] = base[:, ::2]
    sd["views.broadcast"] = torch.tensor([1.5, -2.0, 4.0]).expand(2, 3)
    sd["dtypes.half"] = torch.tensor(
        [1.0, -2.5, 65504.0, math.inf, -math.inf, math.nan, 2.0**-24, 3 * 2.0**-24, 6.097555160522461e-05, -0.0],
        dtype=torch.float16)
    sd["dtypes.bfloat16"] = torch.tensor(
        [1.0, -2.5, 3.3895313892515355e38, math.inf, -math.inf, math.nan, 9.183549615799121e-41, 1.0 / 3.0],
        dtype=torch.bfloat16)
    sd["dtypes.int64"] = torch.tensor([[0, -3], [2**40, 7]], dtype=torch.int64)
    sd["dtypes.int32"] = torch.tensor([-(2**31), 2**24, 5], dtype=torch.int32)
    sd["dtypes.uint8"] = torch.tensor([0, 128, 255], dtype=torch.uint8)
    sd["dtypes.bool"] = torch.tensor([[True, False, True]])
    sd["dtypes.float64"] = torch.tensor([0.1, -1e300, 1e-300], dtype=torch.float64)
    sd["shapes.scalar"] = torch.tensor(3.5)
    sd["shapes.empty"] = torch.zeros(0, 3)
    return sd


def checkpoint_dict():
    torch.manual_seed(7)
    model = torch.nn.Linear(3, 2)
    return {
        "model": model.state_dict(),
        "epoch": 3,
        "best_accuracy": 0.875,
        "name": "tiny",
        "flags": {"amp": False, "resumed": True, "note": None},
        "history": [0.5, 0.25],
        "optimizer": {
            "state": {0: {"momentum_buffer": torch.full((2, 3), 0.25)}, 1: {"momentum_buffer": torch.ones(2)}},
            "param_groups": [{"lr": 0.1, "params": [0, 1]}],
        },
        "layers": [torch.eye(2), torch.arange(3, dtype=torch.int64)],
        "seen_tokens": 2**40,
        "offset": -5,
        "pair": (1, "a"),
    }


def flatten(value, prefix, tensors, skipped):
    """The reader's naming rule: dotted dict keys and list indices down to tensors; subtrees without
    tensors are one skipped leaf."""
    def has_tensor(v):
        if isinstance(v, torch.Tensor):
            return True
        if isinstance(v, dict):
            return any(has_tensor(x) for x in v.values())
        if isinstance(v, (list, tuple)):
            return any(has_tensor(x) for x in v)
        return False

    if isinstance(value, torch.Tensor):
        tensors[prefix] = value
    elif not has_tensor(value):
        skipped.append(prefix)
    elif isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{prefix}.{key}" if prefix else str(key), tensors, skipped)
    else:
        for i, item in enumerate(value):
            flatten(item, f"{prefix}.{i}" if prefix else str(i), tensors, skipped)


def write_expected_safetensors(path, tensors, skipped):
    metadata = {f"stored.{name}": SAFETENSORS_DTYPE[t.dtype] for name, t in tensors.items()}
    metadata["skipped"] = "\n".join(skipped)
    fx.write_safetensors(path, tensors, metadata, sort_keys=True)


def save_pair(out, stem, obj):
    torch.save(obj, os.path.join(out, stem + ".pt"))
    tensors, skipped = {}, []
    flatten(obj, "", tensors, skipped)
    write_expected_safetensors(os.path.join(out, stem + "_expected.safetensors"), tensors, skipped)


def recompress(source, target):
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(fixed, zin.read(info.filename))


def main():
    out = fx.parse_args(__doc__, "checkpoint_files").out
    os.makedirs(out, exist_ok=True)

    sd = state_dict()
    assert isinstance(sd, collections.OrderedDict) and hasattr(sd, "_metadata")
    assert not sd["views.transposed"].is_contiguous() and sd["views.window"].storage_offset() == 5
    save_pair(out, "state_dict", sd)
    save_pair(out, "checkpoint_dict", checkpoint_dict())
    recompress(os.path.join(out, "state_dict.pt"), os.path.join(out, "state_dict_deflated.pt"))

    # The fixtures must load back in PyTorch exactly as written.
    for stem, obj in (("state_dict", sd), ("state_dict_deflated", sd)):
        loaded = torch.load(os.path.join(out, stem + ".pt"))
        assert all(torch.equal(loaded[k], v) or (loaded[k].isnan() == v.isnan()).all() for k, v in obj.items())
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    assert total < 200_000, total
    print(f"wrote {len(os.listdir(out))} files, {total} bytes, to {out}")


if __name__ == "__main__":
    main()
