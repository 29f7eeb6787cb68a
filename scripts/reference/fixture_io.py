"""What every fixture maker in this folder (make_*fixtures.py) shares: the command line, seeding, case folders
of .npy arrays, padding masks, JSON files and the cases.json manifest, and hand-written safetensors files.

The contract is reproducibility: a maker run twice with the same arguments writes byte-identical files, so
regenerating the committed fixtures changes nothing unless a reference changed. That holds for one BLAS: the
committed files were made with Debian's reference BLAS, and OpenBLAS (which scripts/setup installs for
LibTorch, and which Debian's torch then also loads) sums in another order, changing float64 results in the
last bits. So a maker that computes re-runs itself under the reference BLAS (see use_reference_blas).
Nothing here computes an operator; the references are in the *_reference.py files.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE_BLAS_DIR = "/usr/lib/x86_64-linux-gnu/blas"  # Debian's libblas3 (netlib), the BLAS of the fixtures


def fixture_dir(name):
    """tests/fixtures/<name> of this checkout."""
    return os.path.join(REPO, "tests", "fixtures", name)


def use_reference_blas():
    """Re-runs this process (same interpreter, same arguments) with Debian's reference BLAS first on the
    library path, unless it is already the BLAS in use. Without it, a fixture maker run on a machine whose
    default BLAS is OpenBLAS writes files that differ from the committed ones in the last bits."""
    try:
        with open("/proc/self/maps") as f:
            if REFERENCE_BLAS_DIR + "/libblas" in f.read():
                return
    except OSError:
        return
    if os.environ.get("TL_FIXTURES_REEXEC") or not os.path.exists(os.path.join(REFERENCE_BLAS_DIR, "libblas.so.3")):
        print(f"note: torch does not run on the reference BLAS ({REFERENCE_BLAS_DIR}); the files may differ from "
              "the committed ones in the last bits", file=sys.stderr)
        return
    library_path = os.environ.get("LD_LIBRARY_PATH")
    env = dict(os.environ, TL_FIXTURES_REEXEC="1",
               LD_LIBRARY_PATH=REFERENCE_BLAS_DIR + (":" + library_path if library_path else ""))
    print(f"{os.path.basename(sys.argv[0])}: re-running under the reference BLAS ({REFERENCE_BLAS_DIR})",
          file=sys.stderr)
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def parse_args(doc, folder, seed=None, computes=True):
    """--out (default tests/fixtures/<folder>) and, when the maker draws from a seed, --seed. A maker that
    `computes` with torch runs under the reference BLAS (use_reference_blas)."""
    if computes:
        use_reference_blas()
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=fixture_dir(folder))
    if seed is not None:
        parser.add_argument("--seed", type=int, default=seed)
    return parser.parse_args()


def start(doc, folder, seed):
    """The common start of an operator-fixture maker: arguments, float64 by default, the output folder, and
    the NumPy generator every case draws from in order. Returns (args, rng)."""
    args = parse_args(doc, folder, seed)
    torch.set_default_dtype(torch.float64)
    os.makedirs(args.out, exist_ok=True)
    return args, np.random.default_rng(args.seed)


def gaussian(rng, *shape):
    """A float64 tensor of standard normal draws from `rng`."""
    return torch.from_numpy(rng.standard_normal(shape))


def padding_mask(n, padded):
    """Bool mask of n tokens, False at the `padded` positions; None when there are none (no mask file)."""
    if padded is None:
        return None
    mask = torch.ones(n, dtype=torch.bool)
    mask[padded] = False
    return mask


def write_case(out_dir, name, arrays, mask=None):
    """<out_dir>/<name>/<key>.npy for every tensor of `arrays` (in C order, as the C++ reader requires),
    plus mask.npy when the case has a mask."""
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    if mask is not None:
        arrays = dict(arrays, mask=mask)
    for key, tensor in arrays.items():
        array = tensor.numpy()
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        np.save(os.path.join(case_dir, key + ".npy"), array)


def write_json(path, value, **dump_options):
    """`value` as JSON (json.dump with `dump_options`) and a final newline."""
    with open(path, "w") as f:
        json.dump(value, f, **dump_options)
        f.write("\n")


def write_manifest(args, maker, files, cases, **extra):
    """cases.json: which script and seed made the cases, the torch version, what each case folder holds
    (`files`), any `extra` notes, then the cases themselves. `maker` is the maker's __file__."""
    manifest = {"generator": "scripts/reference/" + os.path.basename(maker), "seed": args.seed,
                "torch": torch.__version__, "dtype": "float64", "files": files, **extra, "cases": cases}
    write_json(os.path.join(args.out, "cases.json"), manifest, indent=1)
    print(f"wrote {len(cases)} cases to {args.out}")


def write_safetensors(path, tensors, metadata, sort_keys=False):
    """A safetensors file written by hand (struct + json, no safetensors package): every tensor as
    little-endian float32, in the order of `tensors` or, with `sort_keys`, by name with a key-sorted header.
    The header is padded with spaces (the format allows it) so the data starts 8-byte aligned."""
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name in sorted(tensors) if sort_keys else tensors:
        data = tensors[name].detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=sort_keys).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
