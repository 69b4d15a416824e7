"""format: image_folder with the real binary (issue 27, part 1): a folder of
class folders of JPEG and PNG images (RGB and grayscale, mixed, of varying
sizes, extensions in any case) trains and evaluates on a held-out split well
above the majority baseline, the evaluation report naming the classes by
their folders, and predict on a folder of new image files names each
file's class (its predictions equal those of the same pixels as an array); the decoded pixels equal Pillow's (an image of
image_size is read as it is; a 2x nearest-upsampled image resized back gives
the original pixels); classes: picks and orders the folders; holdout splits
each class the same way for train and eval; a resumed run equals an
uninterrupted one; a file that is not an image is a data error naming it, or
is skipped and counted with on_error: skip; a missing folder or a single
class is refused."""
import json
import pathlib
import re
import shutil

import numpy as np
import pytest
from PIL import Image
from safetensors.numpy import load_file

from conftest import run_dtrain

CLASSES = ["circle", "square", "stripes"]

JOB = """
model:
  input: {{shape: [24, 24, 3]}}
  layers:
    - {{type: conv2d, filters: 8, kernel: 3, activation: relu}}
    - {{type: max_pool2d, size: 2}}
    - {{type: flatten}}
    - {{type: dense, units: 3}}
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.003}}
data:
  train: {{format: image_folder, dir: {d}, image_size: [24, 24], holdout: 0.25, split: train, scale: 0.00392156862745098,
          batch_size: 32, shuffle: 512, num_parallel_calls: 2}}
  eval: {{format: image_folder, dir: {d}, image_size: [24, 24], holdout: 0.25, split: holdout,
         scale: 0.00392156862745098, batch_size: 64}}
run: {{max_steps: {steps}, save_checkpoints_steps: {save}, log_step_count_steps: 100, seed: 3}}
"""


def pattern(k, h, w, rng):
    """Class k's picture: a red disc, a green square or blue stripes on noise."""
    yy, xx = np.mgrid[0:h, 0:w]
    img = rng.normal(100, 30, size=(h, w, 3))
    if k == 0:
        img[((yy - h / 2) ** 2 + (xx - w / 2) ** 2) < (min(h, w) / 3) ** 2] += [120, -40, -40]
    elif k == 1:
        img[(abs(yy - h / 2) < h / 4) & (abs(xx - w / 2) < w / 4)] += [-40, 120, -40]
    else:
        img[(xx // 4) % 2 == 0] += [-40, -40, 120]
    return np.clip(img, 0, 255).astype(np.uint8)


def make_folder(d, per_class=80, seed=0):
    """Mixed JPEG, RGB PNG and grayscale PNG (upper-case extension) of sizes 20..47."""
    rng = np.random.default_rng(seed)
    for k, name in enumerate(CLASSES):
        (d / name).mkdir(parents=True)
        for i in range(per_class):
            h, w = rng.integers(20, 48, size=2)
            img = Image.fromarray(pattern(k, h, w, rng))
            kind = i % 3
            if kind == 0:
                img.save(d / name / f"{i:03d}.jpg", quality=92)
            elif kind == 1:
                img.save(d / name / f"{i:03d}.png")
            else:
                img.convert("L").convert("RGB").save(d / name / f"{i:03d}.PNG")
    (d / "circle" / "notes.txt").write_text("not an image, and not read: its name is not .jpg/.jpeg/.png")


def train(job, *args):
    r = run_dtrain("train", job, "--log-format", "plain", *args)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def test_mixed_images_train_above_the_majority_baseline_on_a_held_out_split(tmp_path):
    d = tmp_path / "images"
    make_folder(d)
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(d=d, steps=200, save=200))
    r = train(job, "--model-dir", tmp_path / "m")
    # floor(0.25 x 80) = 20 of each class held out, 60 trained on.
    assert (f"data.train: image_folder {d}: 180 images (train split) in 3 classes: 0 circle (60), 1 square (60), "
            "2 stripes (60); decoded to 24x24x3") in r.stderr, r.stderr
    m = json.loads((tmp_path / "m" / "eval" / "metrics-200.json").read_text())
    assert m["examples"] == 60
    print(f"image_folder: eval accuracy {m['metrics']['accuracy']:.4f} on 60 held-out images "
          f"(majority baseline 0.3333), loss {m['metrics']['loss']:.4f}")
    assert m["metrics"]["accuracy"] >= 0.8, m
    # The evaluation report names the classes by their folders.
    (report,) = m["report"]["outputs"]
    assert report["classes"] == CLASSES
    assert [c["class"] for c in report["per_class"]] == CLASSES
    assert [c["support"] for c in report["per_class"]] == [20, 20, 20]
    ev = run_dtrain("evaluate", job, "--model-dir", tmp_path / "m")
    assert ev.returncode == 0, ev.stderr
    assert re.search(r"^circle\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+20$", ev.stderr, re.M), ev.stderr

    # predict on a folder of new images (no class folders): one row per file
    # in path order, the predicted class named by its training folder.
    new = tmp_path / "new"
    new.mkdir()
    rng = np.random.default_rng(7)
    truth = {}
    for i in range(30):
        k = i % 3
        h, w = rng.integers(20, 48, size=2)
        name = f"img{i:02d}." + ("jpg" if i % 2 else "png")
        Image.fromarray(pattern(k, h, w, rng)).save(new / name)
        truth[str(new / name)] = CLASSES[k]
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", new, "--output", tmp_path / "p.csv")
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "file,class,class_name,pcircle,psquare,pstripes"
    rows = [l.split(",") for l in lines[1:]]
    assert [row[0] for row in rows] == sorted(truth)
    assert all(row[2] == CLASSES[int(row[1])] for row in rows)
    right = sum(row[2] == truth[row[0]] for row in rows)
    print(f"image_folder: predict on 30 new images of varying size: {right}/30 right")
    assert right >= 24
    # One file works too; and the images' predictions equal those of the
    # same raw pixels as an array (decoded by data convert; predict scales both as data.eval does).
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", new / "img03.jpg",
                   "--output", tmp_path / "one.npy")
    assert r.returncode == 0, r.stderr
    conv = tmp_path / "conv"
    (conv / "x").mkdir(parents=True)
    for f in sorted(truth):
        shutil.copy(f, conv / "x" / pathlib.Path(f).name)
    (conv / "y").mkdir()
    shutil.copy(new / "img00.png", conv / "y" / "z.png")
    r = run_dtrain("data", "convert", "--format", "image_folder", "--dir", conv, "--image-size", "24", "24",
                   "--to", "npy", "--out", tmp_path / "arr")
    assert r.returncode == 0, r.stderr
    pixels = np.load(tmp_path / "arr" / "data-images.npy")[:30]
    np.save(tmp_path / "x.npy", pixels)  # raw: predict scales them as data.eval does
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", tmp_path / "x.npy",
                   "--output", tmp_path / "arr.npy")
    assert r.returncode == 0, r.stderr
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", new, "--output", tmp_path / "img.npy")
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(tmp_path / "img.npy"), np.load(tmp_path / "arr.npy"))
    assert np.array_equal(np.load(tmp_path / "one.npy")[0], np.load(tmp_path / "img.npy")[3])


def test_decoded_pixels_equal_pillows_and_resize_keeps_a_2x_upsampled_image(tmp_path):
    rng = np.random.default_rng(1)
    d = tmp_path / "same_size"
    want = {}
    for k, name in enumerate(["a", "b"]):
        (d / name).mkdir(parents=True)
        for i, ext in enumerate(["jpg", "png", "PNG"]):
            img = Image.fromarray(pattern(k, 20, 28, rng))
            if ext == "PNG":
                img = img.convert("L")
            path = d / name / f"{i}.{ext}"
            img.save(path, quality=90) if ext == "jpg" else img.save(path)
            want[(k, i)] = np.asarray(Image.open(path).convert("RGB"), np.float32)
    out = tmp_path / "npy"
    r = run_dtrain("data", "convert", "--format", "image_folder", "--dir", d, "--image-size", "20", "28",
                   "--to", "npy", "--out", out)
    assert r.returncode == 0, r.stderr
    images, labels = np.load(out / "data-images.npy"), np.load(out / "data-labels.npy")
    assert images.shape == (6, 20, 28, 3)
    assert labels.tolist() == [0, 0, 0, 1, 1, 1]  # folders sorted, files sorted within a folder
    for row, key in enumerate(sorted(want)):
        assert np.array_equal(images[row], want[key]), key

    # Resize: a 2x nearest-upsampled image resized to its own size comes back
    # exactly (half-pixel centres sample between two equal pixels).
    up = tmp_path / "up"
    small = {}
    for name in ("x", "y"):
        (up / name).mkdir(parents=True)
        img = rng.integers(0, 256, size=(10, 14, 3), dtype=np.uint8)
        Image.fromarray(img.repeat(2, axis=0).repeat(2, axis=1)).save(up / name / "big.png")
        small[name] = img
    r = run_dtrain("data", "convert", "--format", "image_folder", "--dir", up, "--image-size", "10", "14",
                   "--color-mode", "grayscale", "--to", "npy", "--out", tmp_path / "gray")
    assert r.returncode == 0, r.stderr
    r = run_dtrain("data", "convert", "--format", "image_folder", "--dir", up, "--image-size", "10", "14",
                   "--to", "npy", "--out", tmp_path / "rgb")
    assert r.returncode == 0, r.stderr
    rgb = np.load(tmp_path / "rgb" / "data-images.npy")
    assert np.array_equal(rgb[0], small["x"]) and np.array_equal(rgb[1], small["y"])
    assert np.load(tmp_path / "gray" / "data-images.npy").shape == (2, 10, 14, 1)


def test_classes_pick_and_order_the_folders_and_the_split_is_stable(tmp_path):
    d = tmp_path / "images"
    make_folder(d, per_class=12)
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(d=d, steps=2, save=2).replace("units: 3", "units: 2"))
    r = train(job, "--model-dir", tmp_path / "m", "--set", "data.train.classes=[stripes, circle]",
              "--set", "data.eval.classes=[stripes, circle]")
    assert "in 2 classes: 0 stripes (9), 1 circle (9)" in r.stderr, r.stderr
    # The split: train and holdout part each class (12 = 9 + 3) without
    # overlap, and the held-out files are the same for a copy of the folder elsewhere.
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(d, copy)
    parts = {}
    for name, folder, split in (("train", d, "train"), ("holdout", d, "holdout"), ("copy", copy, "holdout")):
        r = run_dtrain("data", "convert", "--format", "image_folder", "--dir", folder, "--image-size", "24", "24",
                       "--holdout", "0.25", "--split", split, "--to", "npy", "--out", tmp_path / name)
        assert r.returncode == 0, r.stderr
        parts[name] = (np.load(tmp_path / name / "data-images.npy"), np.load(tmp_path / name / "data-labels.npy"))
    assert np.bincount(parts["train"][1].astype(int)).tolist() == [9, 9, 9]
    assert np.bincount(parts["holdout"][1].astype(int)).tolist() == [3, 3, 3]
    assert np.array_equal(parts["holdout"][0], parts["copy"][0])
    train_rows = {row.tobytes() for row in parts["train"][0]}
    assert not any(row.tobytes() in train_rows for row in parts["holdout"][0])


def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path):
    d = tmp_path / "images"
    make_folder(d, per_class=30)
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(d=d, steps=12, save=6))
    train(job, "--model-dir", tmp_path / "straight", "--no-eval")
    train(job, "--model-dir", tmp_path / "resumed", "--no-eval", "--set", "run.max_steps=6")
    r = train(job, "--model-dir", tmp_path / "resumed", "--no-eval")
    assert "at step 6" in r.stderr, r.stderr
    a = load_file(str(tmp_path / "straight" / "model.ckpt-12.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "model.ckpt-12.safetensors"))
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def test_bad_files_and_folders(tmp_path):
    d = tmp_path / "images"
    make_folder(d, per_class=9)
    (d / "square" / "zz_fake.jpg").write_text("hello")
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(d=d, steps=30, save=30))
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m")
    assert r.returncode == 3, r.stderr
    assert (f"{d}/square/zz_fake.jpg: not a JPEG or PNG image (it starts with 0x68); image_folder reads JPEG and PNG "
            "files (set on_error: skip to leave such files out)") in r.stderr, r.stderr
    r = train(job, "--model-dir", tmp_path / "skip", "--set", "data.train.on_error=skip",
              "--set", "data.eval.on_error=skip")
    assert (f"1 square (7), 2 stripes (7); decoded to 24x24x3; skipped 1 file(s) that are not JPEG or PNG (first: "
            f"{d}/square/zz_fake.jpg)") in r.stderr, r.stderr

    r = run_dtrain("predict", job, "--model-dir", tmp_path / "skip", "--input", tmp_path / "missing.png",
                   "--output", tmp_path / "p.csv")
    assert r.returncode == 3, r.stderr
    assert f"--input {tmp_path}/missing.png: no such file or folder" in r.stderr, r.stderr
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "skip", "--input", d / "square" / "zz_fake.jpg",
                   "--output", tmp_path / "p.csv")
    assert r.returncode == 3, r.stderr
    assert f"{d}/square/zz_fake.jpg: not a JPEG or PNG image" in r.stderr, r.stderr
    r = run_dtrain("validate", job, "--set", "data.train.dir=nowhere")
    assert r.returncode == 3, r.stderr
    assert f'data.train.dir: no such folder "{tmp_path}/nowhere" (resolved from "nowhere" relative to the job ' \
           "file's directory)" in r.stderr, r.stderr
    one = tmp_path / "one"
    (one / "only").mkdir(parents=True)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m1", "--set", f"data.train.dir={one}")
    assert r.returncode == 3, r.stderr
    assert f"dir {one}: 1 class folder(s); expected one sub-folder of images per class, at least two" in r.stderr
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m2", "--set", "data.train.classes=[circle, cat]")
    assert r.returncode == 3, r.stderr
    assert f"data.train: classes[1]: cat is not a folder of {d}" in r.stderr, r.stderr
