#!/usr/bin/env python3
"""Reference checksums of the MNIST files, computed independently of dtrain
with gzip + NumPy. Writes mnist_checksums.json beside this script; the doctest
tests/datasets/idx_test.cpp compares dtrain's IDX reader against it.

Run from the source root:  python3 tests/datasets/reference/mnist_checksums.py
"""
import gzip
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# ../shared beside the clone (CI has it; a user's clone does not), or DTRAIN_SHARED_DIR.
SHARED = os.environ.get("DTRAIN_SHARED_DIR") or os.path.join(HERE, "..", "..", "..", "..", "shared")
DATA = os.path.join(SHARED, "data", "mnist")


def read_idx(path):
    raw = gzip.open(path, "rb").read()
    ndims = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims).reshape(dims)


def checksums(images_file, labels_file):
    images = read_idx(os.path.join(DATA, images_file)).astype(np.int64)
    labels = read_idx(os.path.join(DATA, labels_file)).astype(np.int64)
    flat = images.reshape(-1)
    # Position-weighted sum: catches reordered pixels or images, not just wrong values.
    weights = np.arange(flat.size, dtype=np.int64) % 1000003
    return {
        "count": int(images.shape[0]),
        "rows": int(images.shape[1]),
        "cols": int(images.shape[2]),
        "pixel_sum": int(flat.sum()),
        "weighted_pixel_sum": int((flat * weights).sum()),
        "label_counts": [int(c) for c in np.bincount(labels, minlength=10)],
        "first_labels": [int(v) for v in labels[:10]],
        "last_label": int(labels[-1]),
        # Image 7, row 14 (0-based): one row of raw pixels.
        "image7_row14": [int(v) for v in images[7, 14]],
    }


out = {
    "train_sample": checksums("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "t10k": checksums("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
with open(os.path.join(HERE, "mnist_checksums.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print(json.dumps({k: {kk: v[kk] for kk in ("count", "pixel_sum", "label_counts")} for k, v in out.items()}))
