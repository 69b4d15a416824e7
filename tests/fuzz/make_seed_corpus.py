#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<name>/)
from the project's own samples and test data, plus small files made here
with NumPy and Pillow. Harnesses other than `job` read a selector byte
first (see each fuzz_*.cpp), so the seeds start with one. Seeds are named
seed-*; inputs that found bugs are added by hand as crash-<what>.

    python3 tests/fuzz/make_seed_corpus.py      # rewrites the seed-* files
"""
import gzip
import io
import json
import pathlib
import struct
import zipfile

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fuzz/corpus"


def put(harness, name, data, selectors=(None,)):
    d = CORPUS / harness
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    for sel in selectors:
        body = data if sel is None else bytes([sel]) + data
        suffix = "" if sel is None else f"-s{sel}"
        (d / f"seed-{name}{suffix}").write_bytes(body[:65536])


def clear():
    for f in CORPUS.glob("*/seed-*"):
        f.unlink()


def npy(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def idx(array):
    codes = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}
    head = struct.pack(">BBBB", 0, 0, codes[array.dtype.type], array.ndim)
    head += b"".join(struct.pack(">I", d) for d in array.shape)
    return head + array.astype(array.dtype.newbyteorder(">")).tobytes()


def main():
    clear()
    # job: every sample and bad job, and the `block:` forms that once ended in an internal error.
    for p in sorted((ROOT / "sample_configs").glob("*.yaml")) + sorted((ROOT / "tests/bad_jobs").rglob("*.yaml")):
        put("job", p.stem, p.read_text())
    resnet = (ROOT / "sample_configs/resnet20_synthetic.yaml").read_text()
    put("job", "block-list", resnet.replace("block: basic, repeat: 3, params: {filters: 16}",
                                            "block: [basic], repeat: 3, params: {filters: 16}"))
    put("job", "block-anchor", "x: &b basic\n" + resnet.replace("block: basic, repeat: 3, params: {filters: 16}",
                                                                  "block: *b, repeat: 3, params: {filters: 16}"))
    put("job", "set-overrides", "#set run.max_steps=5\n#set data.train.batch_size=[1]\n"
        + (ROOT / "sample_configs/mnist_mlp.yaml").read_text())
    put("job", "interpolate", (ROOT / "sample_configs/mnist_mlp.yaml").read_text().replace("max_steps:",
                                                                                             "max_steps: ${STEPS} #"))

    # tf_config: TF_CONFIG (even selector) and Slurm (odd).
    configs = [
        {"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]},
         "task": {"type": "worker", "index": 1}},
        {"cluster": {"master": ["h0:2222"], "worker": ["h1:2222"]}, "task": {"type": "master", "index": "0"}},
        {"cluster": {"worker": {"0": "h0:2222", "3": "h3:2222"}}, "task": {"type": "worker", "index": 3},
         "rpc_layer": "grpc", "environment": "cloud"},
        {"cluster": {"worker": ["[::1]:2222", "h1:2222"], "evaluator": ["h9:1"]}, "task": {"type": "evaluator", "index": 0}},
        {"task": {"type": "worker", "index": 0}},
    ]
    for i, c in enumerate(configs):
        put("tf_config", f"tf-{i}", json.dumps(c), selectors=(0, 2))
    for i, s in enumerate(["node[01-03],gpu5\n2(x2),1\n0", "h[1-2,7]-ib\n1(x3)\n2", "a\n4\n3", "n[001-100]\n1(x100)\n99"]):
        put("tf_config", f"slurm-{i}", s, selectors=(1, 3))

    # tfrecord: the test files, with each compression, skip mode and layout.
    for p in sorted((ROOT / "tests/data/tfrecord").glob("*.tfrecord*")):
        put("tfrecord", p.name, p.read_bytes(), selectors=(0, 2, 4 | 8, 16, 24 | 6))

    # arrays: IDX images and labels, NPY, NPZ.
    rng = np.random.default_rng(0)
    put("arrays", "idx-images", idx(rng.integers(0, 255, (3, 4, 4), dtype=np.uint8)), selectors=(0,))
    put("arrays", "idx-images-f32", idx(rng.random((2, 2, 2), dtype=np.float32)), selectors=(0,))
    put("arrays", "idx-labels", idx(np.array([1, 2], dtype=np.uint8)), selectors=(1,))
    put("arrays", "idx-labels-gz", gzip.compress(idx(np.array([1, 2], dtype=np.int32))), selectors=(1, 5))
    for p in sorted((ROOT / "tests/bad_jobs/data").glob("tiny-*")):
        put("arrays", p.name, p.read_bytes(), selectors=(0, 1))
    for p in sorted((ROOT / "tests/data/npy").glob("*.npy")):
        put("arrays", p.name, p.read_bytes(), selectors=(2,))
    put("arrays", "two-rows.npy", npy(rng.random((2, 3), dtype=np.float32)), selectors=(2,))
    for p in sorted((ROOT / "tests/data/npy").glob("*.npz")) + [ROOT / "tests/bad_jobs/data/two_inputs.npz"]:
        put("arrays", p.name, p.read_bytes(), selectors=(3,))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("images.npy", npy(rng.random((2, 2, 2), dtype=np.float32)))
        z.writestr("labels.npy", npy(np.array([0, 1], dtype=np.int64)))
    put("arrays", "made.npz", buf.getvalue(), selectors=(3,))

    # csv
    csvs = {
        "header": "a,b,label\n1,2,0\n3.5,-4e2,1\n",
        "quoted": 'a,"b, with comma","c ""q"""\r\n1,2,3\r\n\r\n"4","5",6\r\n',
        "no-header": "1;2;3\n4;5;6\n",
        "tabs": "x\ty\tlabel\n0.1\t0.2\t1\n",
        "pipes": "x|label\n|1\n2|\n",
        "string-class": "sepal,species\n5.1,setosa\n4.9,virginica\n",
    }
    for name, text in csvs.items():
        put("csv", name, text, selectors=(0, 4, 4 | 8, 4 | 16, 1, 2 | 4, 3 | 4))

    # image: PNG and JPEG of several sizes and channel counts.
    for size in (1, 2, 8, 28):
        for mode, ch in (("L", 0), ("RGB", 1)):
            img = Image.fromarray(rng.integers(0, 255, (size, size) + ((3,) if mode == "RGB" else ()),
                                               dtype=np.uint8), mode)
            sel = ch | ({1: 0, 2: 1, 8: 2, 28: 3}[size] << 1)
            for fmt in ("PNG", "JPEG"):
                b = io.BytesIO()
                img.save(b, fmt)
                put("image", f"{fmt.lower()}-{mode}-{size}", b.getvalue(), selectors=(sel, sel | 8))
    b = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (30, 20, 3), dtype=np.uint8), "RGB").save(b, "JPEG", progressive=True)
    put("image", "jpeg-progressive", b.getvalue(), selectors=(1 | 6,))

    # text: UTF-8 text and a saved vocabulary.
    put("text", "ascii", "hello world\nthe quick brown fox\n", selectors=(0, 1, 2, 6 | 8))
    put("text", "utf8", "caf\u00e9 \u00df \u4e2d\u6587 \U0001f600\n", selectors=(0, 1, 4))
    put("text", "bad-utf8", b"ab\xc3\x28\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf", selectors=(0, 1))
    vocab = {"dtrain_vocabulary": 1, "unit": "char", "size": 4, "unk_id": 3, "files": ["a.txt"], "symbols": ["\n", "a", "\u00e9"]}
    put("text", "vocab-char", json.dumps(vocab), selectors=(0,))
    vocab_b = {"dtrain_vocabulary": 1, "unit": "byte", "size": 3, "unk_id": 2, "files": ["a.bin"], "symbols": [10, 255]}
    put("text", "vocab-byte", json.dumps(vocab_b), selectors=(1,))

    # checkpoint: a real checkpoint of dtrain's and its index.
    model_dir = ROOT / "tests/integration/data/pre_graph_checkpoint/model_dir"
    put("checkpoint", "model.ckpt-3.safetensors", (model_dir / "model.ckpt-3.safetensors").read_bytes(), selectors=(0,))
    put("checkpoint", "index", (model_dir / "checkpoint").read_bytes(), selectors=(1,))
    put("checkpoint", "index-keep", json.dumps({"latest": "model.ckpt-9.safetensors", "all": [
        "model.ckpt-5.safetensors", "model.ckpt-9.safetensors"], "steps": [5, 9], "keep_hours_since": 12.5}), selectors=(1,))
    header = json.dumps({"__metadata__": {"global_step": "7"}, "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "b": {"dtype": "BF16", "shape": [1, 1], "data_offsets": [8, 10]}}).encode()
    put("checkpoint", "made.safetensors", struct.pack("<Q", len(header)) + header + bytes(10), selectors=(0,))


if __name__ == "__main__":
    main()
