#!/usr/bin/env python3
"""ImageNet-style input benchmark: dtrain's streaming pipeline (`dtrain data bench`) against
tf.data (bench/tf_images.py, run by --tf-python) on the same TFRecord shards of JPEGs with the
same ops (decode, random_resized_crop to 224, horizontal flip, normalize, batch 256) at 1 and 2
threads, alternating the sides; images/s, peak RSS of each side's process, and images/s per
core against libjpeg-turbo's own one-thread full-size decode of the same files (the limit,
build/bench/jpeg_decode_limit).

    python3 bench/bench_images.py --tf-python /work/venv-tf/bin/python [--threads 1,2] [--pairs 3]
        [--batches 10] [--warmup 3] [--images 0 (auto: ~10 s of decoding a pass)] [--fixed-size 375x500]
        [--work DIR] [--json-out FILE]

Without --fixed-size the images have ImageNet-like sizes (sides 300..500) and dtrain's job reads
them with `shape: [null, null, 3]`, which needs a pipeline that takes JPEGs of varying size.
"""
import argparse
import io
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import peak_rss_command, read_peak_rss_kib  # noqa: E402
from jpeg_shards import example, frame  # noqa: E402

MEAN = [123.675, 116.28, 103.53]  # ImageNet's, pixels 0..255 (bench/tf_images.py uses the same)
STD = [58.395, 57.12, 57.375]
SIZE = 224

JOB = """# Written by bench/bench_images.py: its ImageNet-style pipeline, read by dtrain data bench.
model:
  input: {{shape: [{size}, {size}, 3]}}
  layers:
    - {{type: global_avg_pool2d}}
    - {{type: dense, units: 1000}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: sgd, learning_rate: 0.1}}
data:
  train: {{format: tfrecord, files: "{files}", stream: true, label_feature: label,
          features: {{image: {{dtype: bytes, decode: jpeg, shape: {shape}}}, label: {{dtype: int64}}}},
          {interleave}num_parallel_calls: {threads}, prefetch: 2, batch_size: {batch}, drop_remainder: true,
          map: [{{random_resized_crop: {{size: [{size}, {size}], scale: [0.08, 1.0], ratio: [0.75, 1.3333333]}}}},
                {{random_flip: horizontal}}, {{normalize: {{mean: {mean}, std: {std}}}}}]}}
run: {{model_dir: {model_dir}, max_steps: 1, seed: 1}}
"""


class BenchError(Exception):
    pass


# ---------------------------------------------------------------- the shards


def draw_size(rng, fixed):
    """(height, width): fixed, or ImageNet-like: the long side 500 (60%) or 375..500, aspect
    4:3, 3:2, 5:4 or 1:1, landscape 3 times in 4, the short side at least 300."""
    if fixed:
        return fixed
    long = 500 if rng.random() < 0.6 else int(rng.integers(375, 501))
    aspect = rng.choice([4 / 3, 3 / 2, 5 / 4, 1.0], p=[0.5, 0.25, 0.1, 0.15])
    short = max(300, min(long, int(round(long / aspect))))
    return (short, long) if rng.random() < 0.75 else (long, short)


def natural_image(rng, h, w):
    """uint8 (h, w, 3): a smooth colour field, a few flat shapes, mid-frequency texture and fine
    noise, so that quality-90 JPEGs of 500x375 take about 100-140 KB, as ImageNet's do."""
    field = rng.uniform(20, 235, (int(rng.integers(3, 7)), int(rng.integers(3, 7)), 3)).astype(np.uint8)
    img = Image.fromarray(field).resize((w, h), Image.BICUBIC)
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(3, 9))):
        cx, cy, s = int(rng.integers(0, w)), int(rng.integers(0, h)), int(rng.integers(20, max(w, h) // 2))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        box = [cx - s // 2, cy - s // 2, cx + s // 2, cy + s // 2]
        kind = int(rng.integers(3))
        if kind == 0:
            draw.ellipse(box, fill=colour)
        elif kind == 1:
            draw.rectangle(box, fill=colour)
        else:
            draw.polygon([(int(rng.integers(0, w)), int(rng.integers(0, h))) for _ in range(3)], fill=colour)
    pixels = np.asarray(img.filter(ImageFilter.GaussianBlur(1.0)), dtype=np.float32)
    texture = rng.normal(128, 40, (h // 2 + 1, w // 2 + 1, 3)).clip(0, 255).astype(np.uint8)
    texture = np.asarray(Image.fromarray(texture).resize((w, h), Image.BICUBIC), dtype=np.float32) - 128
    amplitude = rng.uniform(0.5, 1.5)
    pixels += amplitude * (texture * (26 / 40) + rng.normal(0, 13, (h, w, 1)).astype(np.float32))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def encode(pixels):
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def images_for(a, rng):
    """--images, or (0) enough for a.decode_seconds of full-size decoding on one core: Pillow
    (libjpeg-turbo) decodes 64 sample images first to measure. A multiple of the batch."""
    if a.images > 0:
        return max(a.batch, a.images // a.batch * a.batch)
    samples = [encode(natural_image(rng, *draw_size(rng, a.fixed_size))) for _ in range(64)]
    start = time.perf_counter()
    for _ in range(3):
        for s in samples:
            Image.open(io.BytesIO(s)).load()
    rate = 3 * len(samples) / (time.perf_counter() - start)
    return max(2, math.ceil(rate * a.decode_seconds / a.batch)) * a.batch


def write_shards(a, work):
    """work/shards/train-0000K-of-0000N.tfrecord, reused when work/manifest.json says they were
    written with the same settings; returns the manifest."""
    settings = {"images": a.images, "decode_seconds": a.decode_seconds if a.images == 0 else None,
                "fixed_size": list(a.fixed_size) if a.fixed_size else None, "shards": a.shards, "seed": a.seed, "batch": a.batch, "version": 1}
    manifest_path = work / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest["settings"] == settings and all(Path(f).exists() for f in manifest["files"]):
            print(f"reusing {manifest['images']} images in {work / 'shards'}", flush=True)
            return manifest
    rng = np.random.default_rng(a.seed)
    count = images_for(a, rng)
    shards = work / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    for old in shards.glob("train-*.tfrecord"):
        old.unlink()
    files = [shards / f"train-{k:05d}-of-{a.shards:05d}.tfrecord" for k in range(a.shards)]
    outs = [open(f, "wb") for f in files]
    pixels_total, source_sum, jpeg_bytes, sizes = 0, 0.0, 0, set()
    start = time.perf_counter()
    try:
        for i in range(count):
            h, w = draw_size(rng, a.fixed_size)
            pixels = natural_image(rng, h, w)
            jpeg = encode(pixels)
            outs[i % a.shards].write(frame(example(jpeg, int(rng.integers(0, 1000)))))
            pixels_total += h * w
            source_sum += float(pixels.sum(dtype=np.float64))
            jpeg_bytes += len(jpeg)
            sizes.add((h, w))
            if (i + 1) % 500 == 0:
                print(f"  {i + 1}/{count} images written ({time.perf_counter() - start:.0f} s)", flush=True)
    finally:
        for f in outs:
            f.close()
    manifest = {"settings": settings, "images": count, "files": [str(f) for f in files],
                "pattern": str(shards / "train-*.tfrecord"), "pixels": pixels_total,
                "source_pixel_mean": source_sum / (3 * pixels_total), "jpeg_bytes": jpeg_bytes,
                "sizes": sorted(sizes)[:3] if len(sizes) > 3 else sorted(sizes), "distinct_sizes": len(sizes)}
    manifest_path.write_text(json.dumps(manifest, indent=1))
    print(f"wrote {count} images ({jpeg_bytes / count / 1024:.0f} KiB a JPEG on average, {len(sizes)} distinct "
          f"sizes) to {a.shards} shards in {time.perf_counter() - start:.0f} s", flush=True)
    return manifest


def write_job(a, work, manifest, threads):
    shape = f"[{a.fixed_size[0]}, {a.fixed_size[1]}, 3]" if a.fixed_size else "[null, null, 3]"
    interleave = f"interleave: {{cycle_length: {threads}, block_length: 1}}, " if threads > 1 else ""
    path = work / f"dtrain_images_t{threads}.yaml"
    path.write_text(JOB.format(size=SIZE, files=manifest["pattern"], shape=shape, interleave=interleave,
                               threads=threads, batch=a.batch, mean=MEAN, std=STD,
                               model_dir=work / "unused_model_dir"))
    return path


# ---------------------------------------------------------------- running the sides


def run_side(cmd, work, timeout, what, parse_json=True):
    """Runs cmd under the peak-RSS wrapper (its own peak, not this script's); returns (JSON of
    its last stdout line, or None without parse_json; peak RSS in MiB)."""
    report = work / "peak_rss"
    try:
        out = subprocess.run(peak_rss_command(cmd, report), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what}: no result within {timeout} s: {' '.join(map(str, cmd))}")
    if out.returncode != 0:
        raise BenchError(f"{what} failed (exit {out.returncode}): {' '.join(map(str, cmd))}\n{out.stderr[-3000:]}")
    if not parse_json:
        return None, read_peak_rss_kib(report) / 1024.0
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise BenchError(f"{what}: no JSON line in its output:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return json.loads(lines[-1]), read_peak_rss_kib(report) / 1024.0


def dtrain_cmd(a, job, threads, batches, warmup, *extra):
    return [a.dtrain, "data", "bench", job, "--threads", threads, "--batches", batches, "--warmup", warmup,
            "--json", *extra]


def tf_cmd(a, manifest, threads, variant, batches, warmup, *extra):
    return [a.tf_python, ROOT / "bench" / "tf_images.py", manifest["pattern"], "--threads", threads, "--variant",
            variant, "--batch", a.batch, "--size", SIZE, "--batches", batches, "--warmup", warmup, *extra]


def run_dtrain(a, work, job, threads, batches, warmup, *extra):
    try:
        return run_side(dtrain_cmd(a, job, threads, batches, warmup, *extra), work, a.timeout, "dtrain data bench")
    except BenchError as e:
        if not a.fixed_size and "null" in str(e):
            raise BenchError(f"{e}\nThese images have varying sizes, which dtrain reads with the feature shape "
                             "[null, null, 3]; this dtrain does not take it yet: give --fixed-size HxW "
                             "(e.g. 375x500) instead") from None
        raise


# ---------------------------------------------------------------- verify, then time


def decode_limit(a, work, manifest):
    """libjpeg-turbo's own full-size decode of every image, one thread, verified against the
    manifest: the pixel count of a pass, and the mean pixel value near the source images'."""
    r, _ = run_side([a.limit_bin, manifest["pattern"], "--min-seconds", a.limit_seconds], work, a.timeout,
                    "jpeg_decode_limit")
    if r["images"] != manifest["images"] or r["pixels_per_pass"] != manifest["pixels"]:
        raise BenchError(f"jpeg_decode_limit decoded {r['images']} images of {r['pixels_per_pass']} pixels; the "
                         f"shards hold {manifest['images']} of {manifest['pixels']}")
    if abs(r["pixel_mean"] - manifest["source_pixel_mean"]) > 1.5:
        raise BenchError(f"jpeg_decode_limit's mean pixel {r['pixel_mean']:.2f} is far from the source images' "
                         f"{manifest['source_pixel_mean']:.2f}")
    return r


def check_stats(name, r, batches, batch):
    if r["examples"] != batches * batch:
        raise BenchError(f"{name}: {r['examples']} images in {batches} batches of {batch}")
    # Normalized ImageNet-like pixels: mean near 0, spread near 1.
    if not (-1.5 < r["feature_mean"] < 1.5 and 0.3 < r["feature_std"] < 2.0):
        raise BenchError(f"{name}: implausible normalized values: mean {r['feature_mean']:.3f}, "
                         f"std {r['feature_std']:.3f}")


def verify(a, work, manifest, jobs):
    """Before timing: each side delivers full batches of (256, 224, 224, 3) whose normalized values
    have a plausible mean and std, alike across the sides; and one epoch has the same images."""
    n = a.verify_batches
    threads = a.threads[-1]
    d, _ = run_dtrain(a, work, jobs[threads], threads, n, 0)
    if d["global_batch"] != a.batch or d["feature_shape"] != [SIZE, SIZE, 3]:
        raise BenchError(f"dtrain delivers batches of {d['global_batch']} x {d['feature_shape']}")
    check_stats("dtrain", d, n, a.batch)
    out = {"dtrain": d}
    for variant in ("fused", "plain"):
        t, _ = run_side(tf_cmd(a, manifest, threads, variant, n, 0), work, a.timeout, f"tf.data {variant}")
        if t["batch_shape"] != [a.batch, SIZE, SIZE, 3]:
            raise BenchError(f"tf.data {variant} delivers batches of {t['batch_shape']}")
        check_stats(f"tf.data {variant}", t, n, a.batch)
        # The crops are random on each side, so their statistics agree only over many images.
        if abs(t["feature_mean"] - d["feature_mean"]) > 0.1 or abs(t["feature_std"] / d["feature_std"] - 1) > 0.1:
            raise BenchError(f"the sides' values differ: dtrain mean {d['feature_mean']:.3f} std "
                             f"{d['feature_std']:.3f}, tf.data {variant} mean {t['feature_mean']:.3f} std "
                             f"{t['feature_std']:.3f}")
        out[variant] = t
    epoch = manifest["images"] // a.batch * a.batch
    de, _ = run_dtrain(a, work, jobs[threads], threads, 0, 0, "--set", "data.train.repeat=false")
    te, _ = run_side(tf_cmd(a, manifest, threads, "fused", 0, 0, "--epoch"), work, a.timeout, "tf.data epoch")
    if not de["examples"] == te["examples"] == epoch:
        raise BenchError(f"one epoch: dtrain {de['examples']} images, tf.data {te['examples']}, expected {epoch}")
    out["epoch_images"] = epoch
    print(f"verified: batches of ({a.batch}, {SIZE}, {SIZE}, 3); normalized mean/std dtrain "
          f"{d['feature_mean']:.3f}/{d['feature_std']:.3f}, tf.data fused {out['fused']['feature_mean']:.3f}/"
          f"{out['fused']['feature_std']:.3f}, plain {out['plain']['feature_mean']:.3f}/"
          f"{out['plain']['feature_std']:.3f}; {epoch} images an epoch on both sides", flush=True)
    return out


def baseline_rss(a, work):
    """Peak RSS (MiB) of each side's process doing nothing but start: dtrain printing its
    version, python importing tensorflow and numpy. Context for the peak RSS columns."""
    out = {}
    for name, cmd in (("dtrain", [a.dtrain, "version"]),
                      ("tf", [a.tf_python, "-c", "import numpy, tensorflow"])):
        _, out[name] = run_side(cmd, work, a.timeout, f"{name} start-up", parse_json=False)
    return out


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def fmt_spread(s, digits=0):
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}..{s['max']:.{digits}f})"


def time_pairs(a, work, manifest, jobs):
    """For each thread count, pairs of runs alternating dtrain, tf.data fused, tf.data plain."""
    results = {}
    for threads in a.threads:
        runs = {"dtrain": [], "fused": [], "plain": []}
        for p in range(a.pairs):
            d, d_rss = run_dtrain(a, work, jobs[threads], threads, a.batches, a.warmup)
            runs["dtrain"].append({"images_per_sec": d["examples_per_sec"], "peak_mib": d_rss})
            for variant in ("fused", "plain"):
                t, t_rss = run_side(tf_cmd(a, manifest, threads, variant, a.batches, a.warmup), work, a.timeout,
                                    f"tf.data {variant}")
                runs[variant].append({"images_per_sec": t["examples_per_sec"], "peak_mib": t_rss})
            print(f"  threads {threads} pair {p + 1}: dtrain {runs['dtrain'][-1]['images_per_sec']:.1f} images/s "
                  f"({d_rss:.0f} MiB), tf.data fused {runs['fused'][-1]['images_per_sec']:.1f} "
                  f"({runs['fused'][-1]['peak_mib']:.0f} MiB), plain {runs['plain'][-1]['images_per_sec']:.1f} "
                  f"({runs['plain'][-1]['peak_mib']:.0f} MiB)", flush=True)
        ratios = [d["images_per_sec"] / f["images_per_sec"] for d, f in zip(runs["dtrain"], runs["fused"])]
        results[str(threads)] = {
            "runs": runs,
            "sides": {s: {"images_per_sec": spread([r["images_per_sec"] for r in v]),
                          "peak_mib": spread([r["peak_mib"] for r in v])} for s, v in runs.items()},
            "ratio_vs_fused": spread(ratios),
            "ratio_vs_plain": spread([d["images_per_sec"] / p["images_per_sec"]
                                      for d, p in zip(runs["dtrain"], runs["plain"])]),
        }
    return results


def print_table(a, manifest, limit, results, base):
    lim = limit["images_per_sec"]
    print(f"\n{manifest['images']} images ({manifest['jpeg_bytes'] / manifest['images'] / 1024:.0f} KiB a JPEG, "
          f"{'all ' + 'x'.join(map(str, a.fixed_size)) if a.fixed_size else str(manifest['distinct_sizes']) + ' sizes'}"
          f"), {a.shards} shards; batch {a.batch} of {SIZE}x{SIZE}x3; {a.batches} timed batches after {a.warmup} "
          f"warm-up, {a.pairs} pair(s) alternating dtrain / tf.data fused / tf.data plain")
    print(f"limit: libjpeg-turbo full-size decode, one thread: {lim:.1f} images/s "
          f"({limit['megapixels_per_sec']:.1f} Mpixel/s)")
    print("images/s and peak RSS (MiB): median (min..max) over the runs; ratio: dtrain / tf.data fused per pair; "
          f"start-up alone: dtrain {base['dtrain']:.0f} MiB, python + tensorflow {base['tf']:.0f} MiB\n")
    head = (f"{'T':>2}  {'dtrain img/s':>22} {'tf.data fused img/s':>22} {'ratio':>18} {'tf.data plain img/s':>22} "
            f"{'RSS dtrain':>16} {'RSS tf fused':>16} {'dtrain/core vs limit':>21}  target")
    print(head)
    for threads in a.threads:
        r = results[str(threads)]
        s = r["sides"]
        per_core = s["dtrain"]["images_per_sec"]["median"] / threads
        met = (r["ratio_vs_fused"]["median"] >= 1.5
               and s["dtrain"]["peak_mib"]["max"] <= s["fused"]["peak_mib"]["min"])
        r["per_core_vs_limit"] = per_core / lim
        r["target_met"] = met
        print(f"{threads:>2}  {fmt_spread(s['dtrain']['images_per_sec'], 1):>22} "
              f"{fmt_spread(s['fused']['images_per_sec'], 1):>22} {fmt_spread(r['ratio_vs_fused'], 2):>18} "
              f"{fmt_spread(s['plain']['images_per_sec'], 1):>22} {fmt_spread(s['dtrain']['peak_mib']):>16} "
              f"{fmt_spread(s['fused']['peak_mib']):>16} {per_core:>8.1f} = {100 * per_core / lim:5.1f}%   "
              f"{'met' if met else 'NOT met'}")
    print("\ntarget: dtrain >= 1.5x tf.data fused images/s (median ratio) with no more peak RSS (its largest "
          "against tf.data's smallest)")


def parse_size(text):
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HxW, e.g. 375x500")
    if h < SIZE // 4 or w < SIZE // 4:
        raise argparse.ArgumentTypeError(f"{text!r}: too small")
    return (h, w)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tf-python", required=True, help="python with tensorflow (tensorflow-cpu 2.15)")
    p.add_argument("--dtrain", default=str(ROOT / "build/cli/dtrain"))
    p.add_argument("--limit-bin", default=str(ROOT / "build/bench/jpeg_decode_limit"))
    p.add_argument("--work", default="/tmp/dtrain-bench-images", help="where shards and jobs go (reused)")
    p.add_argument("--images", type=int, default=0, help="images (0: ~--decode-seconds of one-core decoding)")
    p.add_argument("--decode-seconds", type=float, default=10.0)
    p.add_argument("--fixed-size", type=parse_size, default=None, help="HxW: every image this size")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", default="1,2", help="thread counts T, comma-separated")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--batches", type=int, default=10, help="timed batches per run")
    p.add_argument("--warmup", type=int, default=3,
                   help="batches before the clock starts (more than the prefetch depth of 2 on both sides)")
    p.add_argument("--verify-batches", type=int, default=2)
    p.add_argument("--limit-seconds", type=float, default=5.0)
    p.add_argument("--timeout", type=int, default=1800, help="seconds per process")
    p.add_argument("--json-out", default=None)
    a = p.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    for path, what in ((a.dtrain, "--dtrain"), (a.limit_bin, "--limit-bin"), (a.tf_python, "--tf-python")):
        if not Path(path).exists():
            raise SystemExit(f"bench_images.py: {what} {path} does not exist (build with ninja -C build "
                             "cli/dtrain bench/jpeg_decode_limit)")
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        manifest = write_shards(a, work)
        jobs = {t: write_job(a, work, manifest, t) for t in a.threads}
        limit = decode_limit(a, work, manifest)
        print(f"limit: {limit['images_per_sec']:.1f} images/s on one thread (verified: {limit['images']} images, "
              f"mean pixel {limit['pixel_mean']:.2f} against the source's {manifest['source_pixel_mean']:.2f})",
              flush=True)
        checks = verify(a, work, manifest, jobs)
        results = time_pairs(a, work, manifest, jobs)
        base = baseline_rss(a, work)
    except BenchError as e:
        raise SystemExit(f"bench_images.py: {e}")
    print_table(a, manifest, limit, results, base)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({
            "settings": {k: v for k, v in vars(a).items()}, "manifest": manifest, "limit": limit,
            "verify": checks, "results": results, "baseline_peak_mib": base, "load_average_end": os.getloadavg()}, indent=1, default=str))


if __name__ == "__main__":
    main()
