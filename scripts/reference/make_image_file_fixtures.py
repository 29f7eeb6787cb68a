#!/usr/bin/python3
"""Writes the committed PNG fixtures to tests/fixtures/image_files/ with a hand-written encoder (zlib +
struct, no imaging library), so the C++ decoder is checked against bytes it did not produce.

    /usr/bin/python3 scripts/reference/make_image_file_fixtures.py [--out tests/fixtures/image_files]

expected.json lists, per file, height, width, channels (after decoding: alpha dropped, palette expanded),
the maximum sample value (255 or 65535) and the samples row-major, channels last. Rows use every PNG filter
type (None, Sub, Up, Average, Paeth) in turn. Re-running gives byte-identical files. JPEG fixtures are made
in the C++ tests with libjpeg's own encoder, since no independent JPEG encoder is installed.
"""
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_io as fx  # noqa: E402

GREY, RGB, PALETTE, RGBA = 0, 2, 3, 6
# Adam7 interlacing passes as (x0, y0, dx, dy), PNG specification §8.2.
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def filter_row(kind, row, prior, bpp):
    out = bytearray()
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prior[i] if prior else 0
        c = prior[i - bpp] if prior and i >= bpp else 0
        predictor = [0, a, b, (a + b) // 2, paeth(a, b, c)][kind]
        out.append((x - predictor) & 0xFF)
    return bytes([kind]) + bytes(out)


def pack_rows(rows, bit_depth):
    """rows: lists of samples → bytes per row (sub-byte depths packed most significant bits first)."""
    packed = []
    for row in rows:
        if bit_depth == 16:
            packed.append(b"".join(struct.pack(">H", v) for v in row))
        elif bit_depth == 8:
            packed.append(bytes(row))
        else:
            per_byte = 8 // bit_depth
            out = bytearray()
            for i in range(0, len(row), per_byte):
                byte = 0
                for j, v in enumerate(row[i:i + per_byte]):
                    byte |= v << (8 - bit_depth * (j + 1))
                out.append(byte)
            packed.append(bytes(out))
    return packed


def image_data(rows, bit_depth, samples_per_pixel):
    bpp = max(1, samples_per_pixel * bit_depth // 8)
    out, prior = b"", None
    for y, row in enumerate(pack_rows(rows, bit_depth)):
        out += filter_row(y % 5, row, prior, bpp)
        prior = row
    return out


def png(width, height, bit_depth, color, rows, samples_per_pixel, extra=b"", interlace=False):
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color, 0, 0, 1 if interlace else 0)
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            sub = [[v for px in range(x0, width, dx) for v in row[px * samples_per_pixel:(px + 1) * samples_per_pixel]]
                   for row in rows[y0::dy]]
            if sub and sub[0]:
                raw += image_data(sub, bit_depth, samples_per_pixel)
    else:
        raw = image_data(rows, bit_depth, samples_per_pixel)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def pattern(height, width, channels, scale, seed):
    return [[(seed + 37 * y + 11 * x + 71 * c) * 2654435761 % scale for x in range(width) for c in range(channels)]
            for y in range(height)]


def main():
    out = fx.parse_args(__doc__, "image_files", computes=False).out
    os.makedirs(out, exist_ok=True)
    expected = {}

    def emit(name, data, height, width, channels, max_value, samples):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        flat = [v for row in samples for v in row]
        assert len(flat) == height * width * channels
        expected[name] = {"height": height, "width": width, "channels": channels, "max": max_value, "samples": flat}

    grey = pattern(5, 7, 1, 256, 1)
    emit("grey8_5x7.png", png(7, 5, 8, GREY, grey, 1), 5, 7, 1, 255, grey)

    rgb = pattern(6, 4, 3, 256, 2)
    emit("rgb8_6x4.png", png(4, 6, 8, RGB, rgb, 3), 6, 4, 3, 255, rgb)

    rgba = pattern(3, 5, 4, 256, 3)
    emit("rgba8_3x5.png", png(5, 3, 8, RGBA, rgba, 4), 3, 5, 3, 255,
         [[v for i, v in enumerate(row) if i % 4 != 3] for row in rgba])

    grey16 = pattern(4, 3, 1, 65536, 4)
    emit("grey16_4x3.png", png(3, 4, 16, GREY, grey16, 1), 4, 3, 1, 65535, grey16)

    # 2-bit grey expands to 8 bits by repeating the bit pattern: 0, 85, 170, 255.
    grey2 = pattern(3, 9, 1, 4, 5)
    emit("grey2_3x9.png", png(9, 3, 2, GREY, grey2, 1), 3, 9, 1, 255, [[v * 85 for v in row] for row in grey2])

    colours = [(0, 0, 0), (255, 128, 0), (10, 200, 30), (255, 255, 255)]
    palette = chunk(b"PLTE", bytes(v for c in colours for v in c)) + chunk(b"tRNS", bytes([0, 255, 128, 255]))
    indices = pattern(4, 6, 1, 4, 6)
    emit("palette_4x6.png", png(6, 4, 8, PALETTE, indices, 1, extra=palette), 4, 6, 3, 255,
         [[v for i in row for v in colours[i]] for row in indices])

    adam7 = pattern(11, 10, 3, 256, 7)
    emit("rgb8_interlaced_11x10.png", png(10, 11, 8, RGB, adam7, 3, interlace=True), 11, 10, 3, 255, adam7)

    fx.write_json(os.path.join(out, "expected.json"), expected, indent=None, separators=(",", ":"), sort_keys=True)
    print(f"wrote {len(expected)} PNG files and expected.json to {out}")


if __name__ == "__main__":
    main()
