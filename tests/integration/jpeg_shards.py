"""Writes TFRecord shards of JPEG images for the streaming tests, fast: a few
distinct images are encoded once (Pillow) and framed once, then their framed
records are written again and again, so a gigabyte costs its disk writes.
Record r of a shard holds image r % distinct (label = that number % 10);
dtrain tells the copies apart by (file, record number)."""
import io
import struct

import numpy as np
from PIL import Image

_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked(n)) + data + struct.pack("<I", masked(data))


def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number, payload):  # length-delimited protobuf field
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def example(jpeg, label):
    """A serialized tf.Example {"image": bytes_list [jpeg], "label": int64_list [label]}."""
    image = _field(1, _field(1, jpeg))                   # Feature.bytes_list(1) -> BytesList.value(1)
    lab = _field(3, _field(1, _varint(label)))           # Feature.int64_list(3) -> Int64List.value(1), packed
    entries = _field(1, _field(1, b"image") + _field(2, image)) + _field(1, _field(1, b"label") + _field(2, lab))
    return _field(1, entries)                            # Example.features(1) -> Features.feature map


def jpegs(count, size, seed=0):
    """count JPEGs of size x size RGB uniform noise (quality 100, no chroma subsampling: about
    4.3 bytes a pixel, so a gigabyte costs few decoded pixels) and a gradient that tells them apart."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        base = np.linspace(0, 64, size)[None, :, None] * (i % 4)
        pixels = np.clip(base + rng.integers(0, 192, (size, size, 3)), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="JPEG", quality=100, subsampling=0)
        out.append(buf.getvalue())
    return out


def write_shards(directory, shards, records_per_shard, size, distinct=64):
    """shards files directory/data-0000K-of-0000N.tfrecord; returns (paths, total bytes)."""
    framed = [frame(example(j, i % 10)) for i, j in enumerate(jpegs(distinct, size))]
    paths, total = [], 0
    for s in range(shards):
        path = directory / f"data-{s:05d}-of-{shards:05d}.tfrecord"
        with open(path, "wb") as f:
            for r in range(records_per_shard):
                f.write(framed[(r + s) % distinct])
        total += path.stat().st_size
        paths.append(path)
    return paths, total


def photo_jpegs(sizes, seed=0, quality=90):
    """One JPEG per (height, width) in sizes: smooth gradients and stripes with mild noise, quality 90
    with Pillow's default 4:2:0 chroma subsampling (as photographs are stored)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, (h, w) in enumerate(sizes):
        y, x = np.mgrid[0:h, 0:w]
        pixels = np.stack([128 + 60 * np.sin(x * (0.05 + 0.02 * c) + i) * np.cos(y * 0.07) + (x - y) * 0.3
                           for c in range(3)], axis=-1) + rng.normal(0, 6, (h, w, 3))
        buf = io.BytesIO()
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=quality)
        out.append(buf.getvalue())
    return out


def write_sized_shards(directory, shards, sizes):
    """shards files directory/data-0000K-of-0000N.tfrecord holding one photo_jpegs image per size (label i % 10),
    dealt round-robin; returns the paths."""
    framed = [frame(example(j, i % 10)) for i, j in enumerate(photo_jpegs(sizes))]
    paths = []
    for s in range(shards):
        path = directory / f"data-{s:05d}-of-{shards:05d}.tfrecord"
        with open(path, "wb") as f:
            for r in framed[s::shards]:
                f.write(r)
        paths.append(path)
    return paths
