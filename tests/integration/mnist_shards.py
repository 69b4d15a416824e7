"""Writes TFRecord shards of MNIST-sized tf.Examples {"image": 28x28x1 uint8 pixels as one
bytes value, "label": int64} for the streaming-by-default tests, vectorised with numpy: every
record has the same layout (a label 0..9 is one varint byte), so a shard is one (records, bytes)
array whose pixel and label columns are filled in, and the records' CRC32Cs are computed a byte
column at a time over all of them (400,000 records in a few seconds)."""
import struct

import numpy as np

from jpeg_shards import _TABLE, example, masked

_CRC_TABLE = np.array(_TABLE, dtype=np.uint32)
PIXELS = 28 * 28


def crc32c_rows(rows):
    """CRC32C of each row of a (n, L) uint8 array, as (n,) uint32."""
    columns = np.ascontiguousarray(rows.T)  # one contiguous column per step
    c = np.full(rows.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for col in columns:
        c = _CRC_TABLE[(c ^ col) & 0xFF] ^ (c >> np.uint32(8))
    return c ^ np.uint32(0xFFFFFFFF)


def masked_rows(rows):
    c = crc32c_rows(rows)
    return ((c >> np.uint32(15)) | (c << np.uint32(17))) + np.uint32(0xA282EAD8)


def _layout():
    """The serialized example of all-zero pixels and label 0, and where its pixels and label byte are."""
    a, b = example(bytes([1]) * PIXELS, 0), example(bytes([2]) * PIXELS, 0)
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    assert len(diff) == PIXELS and diff[-1] - diff[0] == PIXELS - 1
    c = example(bytes([1]) * PIXELS, 5)
    label = [i for i in range(len(a)) if a[i] != c[i]]
    assert len(label) == 1
    return np.frombuffer(example(bytes(PIXELS), 0), dtype=np.uint8), diff[0], label[0]


def write_mnist_shards(directory, shards, records, seed=0):
    """`records` examples in `shards` files directory/data-0000K-of-0000N.tfrecord: random pixels
    and labels (record i of the whole set: rng row i). Returns (paths, total bytes)."""
    template, pixel_at, label_at = _layout()
    length = len(template)
    header = struct.pack("<Q", length)
    header += struct.pack("<I", masked(header))
    rng = np.random.default_rng(seed)
    paths, total = [], 0
    for s in range(shards):
        n = records * (s + 1) // shards - records * s // shards
        data = np.empty((n, length), dtype=np.uint8)
        data[:] = template
        data[:, pixel_at:pixel_at + PIXELS] = rng.integers(0, 256, (n, PIXELS), dtype=np.uint8)
        data[:, label_at] = rng.integers(0, 10, n, dtype=np.uint8)
        framed = np.empty((n, 12 + length + 4), dtype=np.uint8)
        framed[:, :12] = np.frombuffer(header, dtype=np.uint8)
        framed[:, 12:12 + length] = data
        framed[:, 12 + length:] = masked_rows(data).astype("<u4").view(np.uint8).reshape(n, 4)
        path = directory / f"data-{s:05d}-of-{shards:05d}.tfrecord"
        framed.tofile(path)
        total += path.stat().st_size
        paths.append(path)
    return paths, total
