#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora, tests/fuzz/corpus/<target>/, from scratch.

Each corpus holds small valid inputs (the project's own fixtures and files made here) and the malformed kinds the
unit tests already try (truncated, wrong magic, lengths past the end, absurd shapes, wrong dtypes, a pickle that
names os.system, bad specs). libFuzzer mutates from these. Run from anywhere; needs python3-torch (the tensor
listings of the vit-pytorch fixtures) and a C compiler with libjpeg (the JPEG seeds, made by libjpeg itself).
Files are named by content, so re-running gives the same corpus.
"""
import gzip
import hashlib
import io
import json
import pathlib
import pickle
import shutil
import struct
import subprocess
import tempfile
import zipfile
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def write(target, data, label):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    (folder / f"{label}-{digest}").write_bytes(data)


def truncations(data):
    return [data[: len(data) // 2], data[: max(1, len(data) - 1)]]


# --- .npy -------------------------------------------------------------------------------------------------------
def npy(descr, shape, payload, version=1, fortran=False, header=None):
    text = header or "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", "(" + "".join(f"{s}, " for s in shape) + ")")
    prefix = 10 if version == 1 else 12
    pad = (64 - (prefix + len(text) + 1) % 64) % 64
    text = (text + " " * pad + "\n").encode()
    size = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + size + text + payload


def npy_seeds():
    f4 = struct.pack("<6f", 0.5, -1, 2, 3.25, 1e-3, 7)
    valid = {
        "f4-2x3": npy("<f4", (2, 3), f4),
        "f8-vector": npy("<f8", (4,), struct.pack("<4d", 1, 2, 3, 4)),
        "f8-v2-header": npy("<f8", (2, 1), struct.pack("<2d", 1, 2), version=2),
        "mask-bool": npy("|b1", (5,), bytes([1, 1, 0, 1, 0])),
        "mask-u1": npy("|u1", (3, 1), bytes([1, 0, 1])),
        "mask-i8": npy("<i8", (3,), struct.pack("<3q", 1, 1, 0)),
    }
    for label, data in valid.items():
        write("npy", data, label)
    bad = {
        "bad-magic": b"\x93NUMPX" + valid["f4-2x3"][6:],
        "version-9": b"\x93NUMPY\x09\x00" + valid["f4-2x3"][8:],
        "header-past-end": b"\x93NUMPY\x01\x00\xff\xff{'descr'",
        "fortran": npy("<f4", (2, 3), f4, fortran=True),
        "big-endian": npy(">f4", (2, 3), f4),
        "complex": npy("<c16", (1,), b"\0" * 16),
        "huge-shape": npy("<f8", (1 << 40, 1 << 30), b"\0" * 16),
        "negative-dim": npy("<f4", (-2, 3), f4),
        "short-data": npy("<f4", (4, 3), f4),
        "three-d": npy("<f4", (1, 2, 3), f4),
        "header-not-dict": npy("", (), b"", header="[1, 2, 3]"),
        "mask-values-2": npy("|u1", (3,), bytes([1, 2, 0])),
    }
    for label, data in bad.items():
        write("npy", data, label)
    for data in truncations(valid["f4-2x3"]):
        write("npy", data, "truncated")


# --- safetensors ------------------------------------------------------------------------------------------------
def safetensors(header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    for name in ["checkpoint_dict_expected.safetensors", "state_dict_expected.safetensors"]:
        write("safetensors", (FIXTURES / "checkpoint_files" / name).read_bytes(), "fixture")
    data = struct.pack("<4f", 1, 2, 3, 4) + struct.pack("<2e", 0.5, -2) + b"\x80\x3f\x00\x40"
    good = {"__metadata__": {"format": "pt"},
            "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
            "h": {"dtype": "F16", "shape": [2], "data_offsets": [16, 20]},
            "b": {"dtype": "BF16", "shape": [2], "data_offsets": [20, 24]}}
    write("safetensors", safetensors(good, data), "f32-f16-bf16")

    def variant(label, **changes):
        header = json.loads(json.dumps(good))
        for key, value in changes.items():
            header["w"][key] = value
        write("safetensors", safetensors(header, data), label)

    variant("offsets-past-end", data_offsets=[0, 4096])
    variant("offsets-overlap", data_offsets=[8, 24])
    variant("shape-mismatch", shape=[3, 3])
    variant("unknown-dtype", dtype="C64")
    variant("huge-shape", shape=[1 << 40, 1 << 40])
    variant("negative-shape", shape=[-1, 4])
    write("safetensors", struct.pack("<Q", 1 << 60) + b"{}", "header-length-huge")
    write("safetensors", struct.pack("<Q", 100) + b'{"a":', "header-past-end")
    write("safetensors", struct.pack("<Q", 4) + b"[1] ", "header-not-object")
    for data_ in truncations(safetensors(good, data)):
        write("safetensors", data_, "truncated")


# --- zip and torch.save -----------------------------------------------------------------------------------------
def small_zips():
    made = {}
    for label, method, zip64 in [("stored", zipfile.ZIP_STORED, False), ("deflated", zipfile.ZIP_DEFLATED, False),
                                 ("zip64", zipfile.ZIP_STORED, True)]:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", method) as z:
            for name, content in [("archive/data.pkl", b"\x80\x02}q\x00."), ("archive/data/0", b"\0" * 64)]:
                with z.open(name, "w", force_zip64=zip64) as entry:
                    entry.write(content)
        made[label] = buffer.getvalue()
    return made


def zip_seeds():
    fixtures = [FIXTURES / "checkpoint_files" / n for n in ["state_dict.pt", "state_dict_deflated.pt"]]
    for path in fixtures:
        write("zip", path.read_bytes(), "fixture")
    for label, data in small_zips().items():
        write("zip", data, label)
        corrupt = bytearray(data)
        corrupt[40] ^= 0xFF  # inside the first entry's data: a CRC mismatch
        write("zip", bytes(corrupt), label + "-bad-crc")
        write("zip", data[:-10], label + "-no-end-record")
        cd = data.rfind(b"PK\x05\x06")
        wrong = bytearray(data)
        wrong[cd + 16:cd + 20] = struct.pack("<I", 0x7FFFFFF0)  # central directory offset past the end
        write("zip", bytes(wrong), label + "-cd-offset")


def torch_pickle_seeds():
    for path in [FIXTURES / "checkpoint_files" / "state_dict.pt", FIXTURES / "checkpoint_files" / "checkpoint_dict.pt"]:
        with zipfile.ZipFile(path) as z:
            data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
        write("torch_pickle", data, "fixture")
        write("torch_pickle", data[: len(data) // 2], "truncated")
    write("torch_pickle", b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.", "os-system")
    for value in [{"a": 1, "b": [1.5, "x", None, True]}, (1, 2, (3,)), {"nested": {"k": [0] * 10}}]:
        write("torch_pickle", pickle.dumps(value, protocol=2), "plain")
    write("torch_pickle", b"\x80\x02(((((((((((((((((((((.", "deep-marks")


def torch_zip_seeds():
    for path in [FIXTURES / "checkpoint_files" / "state_dict.pt", FIXTURES / "checkpoint_files" / "checkpoint_dict.pt",
                 FIXTURES / "checkpoint_files" / "state_dict_deflated.pt"]:
        data = path.read_bytes()
        write("torch_zip", data, "fixture")
        write("torch_zip", data[: len(data) // 2], "truncated")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02cos\nsystem\nq\x00.")
    write("torch_zip", buffer.getvalue(), "os-system")
    with zipfile.ZipFile(FIXTURES / "checkpoint_files" / "state_dict.pt") as source:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            for name in source.namelist():
                if not name.endswith("/data/0"):
                    z.writestr(name, source.read(name))
    write("torch_zip", buffer.getvalue(), "missing-storage")


# --- IDX --------------------------------------------------------------------------------------------------------
def idx(type_code, shape, payload):
    return bytes([0, 0, type_code, len(shape)]) + b"".join(struct.pack(">I", s) for s in shape) + payload


def idx_seeds():
    images = idx(0x08, (2, 3, 3), bytes(range(18)))
    labels = idx(0x08, (4,), bytes([0, 9, 3, 1]))
    for label, data in [("images", images), ("labels", labels)]:
        write("idx", data, label)
        write("idx", gzip.compress(data, mtime=0), label + "-gz")
    write("idx", idx(0x0D, (2,), b"\0" * 8), "float-type")
    write("idx", idx(0x08, (), b""), "rank-0")
    write("idx", idx(0x08, (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), b"\0" * 8), "huge-dims")
    write("idx", idx(0x08, (5, 5), b"\0" * 3), "short-data")
    write("idx", b"\1\2\3\4", "bad-magic")
    write("idx", gzip.compress(images, mtime=0)[:20], "truncated-gz")


# --- images -----------------------------------------------------------------------------------------------------
JPEG_MAKER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
int main(int argc, char** argv) {
  int w = atoi(argv[2]), h = atoi(argv[3]), c = atoi(argv[4]), progressive = atoi(argv[5]);
  FILE* out = fopen(argv[1], "wb");
  struct jpeg_compress_struct info; struct jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors); jpeg_create_compress(&info); jpeg_stdio_dest(&info, out);
  info.image_width = w; info.image_height = h; info.input_components = c;
  info.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info); jpeg_set_quality(&info, 90, TRUE);
  if (progressive) jpeg_simple_progression(&info);
  jpeg_start_compress(&info, TRUE);
  unsigned char row[64 * 3];
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w * c; ++x) row[x] = (unsigned char)(x * 7 + y * 13);
    JSAMPROW rows[1] = {row}; jpeg_write_scanlines(&info, rows, 1);
  }
  jpeg_finish_compress(&info); fclose(out); return 0;
}
"""


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def image_seeds():
    pngs = sorted((FIXTURES / "image_files").glob("*.png"))
    for path in pngs:
        write("image", path.read_bytes(), "fixture")
    first = pngs[0].read_bytes()
    for data in truncations(first):
        write("image", data, "png-truncated")
    huge = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 0, 0, 0, 0)) + \
        png_chunk(b"IDAT", zlib.compress(b"\0" * 64)) + png_chunk(b"IEND", b"")
    write("image", huge, "png-huge-ihdr")
    with tempfile.TemporaryDirectory() as tmp:
        maker = pathlib.Path(tmp) / "make_jpeg"
        subprocess.run(["cc", "-x", "c", "-", "-o", str(maker), "-ljpeg"], input=JPEG_MAKER.encode(), check=True)
        for label, args in [("grey", ["16", "12", "1", "0"]), ("rgb", ["9", "7", "3", "0"]),
                            ("rgb-progressive", ["20", "10", "3", "1"])]:
            out = pathlib.Path(tmp) / "out.jpg"
            subprocess.run([str(maker), str(out)] + args, check=True)
            data = out.read_bytes()
            write("image", data, "jpeg-" + label)
            write("image", data[: len(data) // 2], "jpeg-truncated")
    write("image", b"GIF89a\x01\x00\x01\x00", "not-png-or-jpeg")


# --- sessions ---------------------------------------------------------------------------------------------------
def session_seeds():
    for path in sorted((ROOT / "resources").glob("*session*.json")):
        write("session", path.read_bytes(), "builtin")
    base = json.loads((ROOT / "resources" / "cloud_session.json").read_text())

    def variant(label, edit):
        session = json.loads(json.dumps(base))
        edit(session)
        write("session", json.dumps(session).encode(), label)

    variant("version-99", lambda s: s.update(version=99))
    variant("no-operators", lambda s: s.update(operators=[]))
    variant("unknown-family", lambda s: s.update(operators=[{"family": "nope", "params": {}}]))
    variant("param-type", lambda s: s["operators"][0].update(params={"T": "ten"}))
    variant("source-not-object", lambda s: s.update(source=3))
    variant("export-huge", lambda s: s.update(export={"width": 1 << 30, "height": -5, "scale": 1e300}))
    write("session", b'{"format": "transportlens-session", "version": 1, "source": {', "truncated")
    write("session", b"not json at all", "not-json")


# --- specs (first byte: even = operator spec, odd = source spec) ------------------------------------------------
def spec_seeds():
    operators = ["softmax", "sinkhorn:T=10,eps=0.5", "sinkhorn:T=3,eps=1e-300", "esp:slices=8,tau=1",
                 "lot:r=8", "banded:W=4,base_steps=2,tail_steps=2", "diff:lambda=0.5", "asap", "sinkhorn:T=-1",
                 "sinkhorn:eps=nan", "nope:x=1", "sinkhorn:T=1,T=2", "sinkhorn:", ":", "esp:slices=99999999999999999999"]
    sources = ["synthetic:gaussian:n=256,d=64,seed=0", "synthetic:cloud:shape=torus,n=300,seed=0",
               "files:q=Q.npy,k=K.npy,v=V.npy,mask=M.npy", "model:checkpoint=DIR,image=fashion-mnist:test:0,layer=5,head=0",
               "synthetic:gaussian:n=-1", "synthetic:gaussian:n=1e12", "files:q=", "model:layer=x", "unknown:a=b"]
    for text in operators:
        write("spec", b"\0" + text.encode(), "operator")
    for text in sources:
        write("spec", b"\1" + text.encode(), "source")


# --- Hugging Face config and weight names (JSON, NUL, "name dim0 dim1 ..." per line) ----------------------------
def listing_of_safetensors(path):
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    return "\n".join(f"{name} " + " ".join(map(str, t["shape"])) for name, t in header.items() if name != "__metadata__")


def hf_model_seeds():
    import torch  # only here: the vit-pytorch fixtures are torch.save files

    for folder in sorted((FIXTURES / "vit").glob("hf_*")):
        listing = listing_of_safetensors(folder / "model.safetensors")
        write("hf_model", (folder / "config.json").read_bytes() + b"\0" + listing.encode(), folder.name)
        config = json.loads((folder / "config.json").read_text())
        for key, value in [("num_hidden_layers", 1 << 30), ("hidden_size", -1), ("num_attention_heads", 0),
                           ("image_size", 3)]:
            broken = dict(config, **{key: value})
            write("hf_model", json.dumps(broken).encode() + b"\0" + listing.encode(), f"{folder.name}-{key}")
    side = (FIXTURES / "vit" / "vitpytorch_sinkhorn" / "side.json").read_bytes()
    state = torch.load(FIXTURES / "vit" / "vitpytorch_sinkhorn" / "state_dict.pt", map_location="cpu")
    listing = "\n".join(f"{name} " + " ".join(map(str, t.shape)) for name, t in state.items())
    write("hf_model", side + b"\0" + listing.encode(), "vitpytorch")
    write("hf_model", b'{"heads": 0, "dim_head": -3}\0' + listing.encode(), "vitpytorch-bad-side")


def main():
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    for make in [npy_seeds, safetensors_seeds, zip_seeds, torch_pickle_seeds, torch_zip_seeds, idx_seeds,
                 image_seeds, session_seeds, spec_seeds, hf_model_seeds]:
        make()
    for folder in sorted(CORPUS.iterdir()):
        print(f"{folder.name}: {len(list(folder.iterdir()))} files")


if __name__ == "__main__":
    main()
