"""tf.data side of bench_images.py, run by the TensorFlow python (--tf-python) in its own
process: TFRecord shards of JPEG tf.Examples -> parse -> ImageNet training crop -> resize
bilinear to 224 -> random_flip_left_right -> normalize -> batch (drop_remainder) -> prefetch,
with intra/inter-op threads, the tf.data thread pool, num_parallel_reads and num_parallel_calls
all T. --variant fused crops inside the decoder (tf.image.decode_and_crop_jpeg, the standard
recipe); plain decodes the whole JPEG (tf.io.decode_jpeg) and then crops. Every delivered batch
is checked (shape, all finite) and summed, as dtrain data bench does; one JSON line is printed.

    python tf_images.py 'shards/train-*.tfrecord' --threads 2 --variant fused --batches 8 --warmup 2
    python tf_images.py 'shards/train-*.tfrecord' --threads 2 --epoch   # one pass: count the images
"""
import argparse
import glob
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

MEAN = [123.675, 116.28, 103.53]  # ImageNet's, pixels 0..255
STD = [58.395, 57.12, 57.375]


def peak_rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def crop_window(jpeg):
    """[y, x, h, w] of a random crop: area 8%..100% of the image, aspect 3/4..4/3, 10 tries, else
    the whole image (tf.image.sample_distorted_bounding_box, as the TF ImageNet models use it)."""
    shape = tf.io.extract_jpeg_shape(jpeg)
    whole = tf.constant([0.0, 0.0, 1.0, 1.0], dtype=tf.float32, shape=[1, 1, 4])
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        shape, bounding_boxes=whole, min_object_covered=0.08, aspect_ratio_range=(3 / 4, 4 / 3),
        area_range=(0.08, 1.0), max_attempts=10, use_image_if_no_bounding_boxes=True)
    y, x, _ = tf.unstack(begin)
    h, w, _ = tf.unstack(size)
    return tf.stack([y, x, h, w])


def make_parse(variant, size):
    features = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}
    mean = tf.constant(MEAN, tf.float32)
    std = tf.constant(STD, tf.float32)

    def parse(record):
        ex = tf.io.parse_single_example(record, features)
        jpeg = ex["image"]
        window = crop_window(jpeg)
        if variant == "fused":
            image = tf.image.decode_and_crop_jpeg(jpeg, window, channels=3)
        else:
            full = tf.io.decode_jpeg(jpeg, channels=3)
            image = tf.image.crop_to_bounding_box(full, window[0], window[1], window[2], window[3])
        image = tf.image.resize(image, [size, size], method="bilinear")
        image = tf.image.random_flip_left_right(image)
        return (image - mean) / std, ex["label"]
    return parse


def dataset(files, threads, variant, batch, size, repeat):
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=threads if threads > 1 else None)
    if repeat:
        ds = ds.repeat()
    ds = ds.map(make_parse(variant, size), num_parallel_calls=threads)
    ds = ds.batch(batch, drop_remainder=True).prefetch(2)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    return ds.with_options(options)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--variant", choices=["fused", "plain"], default="fused")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--epoch", action="store_true", help="read one pass (no repeat) and count it")
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    files = sorted(glob.glob(a.files))
    if not files:
        raise SystemExit(f"tf_images.py: {a.files}: no file matches")
    ds = dataset(files, a.threads, a.variant, a.batch, a.size, repeat=not a.epoch)
    want = (a.batch, a.size, a.size, 3)
    total = None if a.epoch else a.warmup + a.batches
    warmup = 0 if a.epoch else a.warmup
    n = batches = examples = 0
    values = total_sum = total_squares = 0.0
    start = time.perf_counter()
    for images, labels in ds:
        x = images.numpy()
        if x.shape != want or labels.shape != (a.batch,):
            raise SystemExit(f"tf_images.py: batch {n} has images {x.shape} and labels {labels.shape}; expected {want}")
        if not np.isfinite(x).all():
            raise SystemExit(f"tf_images.py: batch {n} holds a value that is not finite")
        flat = x.reshape(-1)
        if n >= warmup:
            total_sum += float(flat.sum(dtype=np.float64))
            total_squares += float(np.dot(flat, flat))
            values += flat.size
            batches += 1
            examples += x.shape[0]
        n += 1
        if n == warmup:
            start = time.perf_counter()
        if total is not None and n >= total:
            break
    seconds = time.perf_counter() - start
    mean = total_sum / values if values else 0.0
    print(json.dumps({
        "variant": a.variant, "threads": a.threads, "batches": batches, "examples": examples, "seconds": seconds,
        "examples_per_sec": examples / seconds if seconds > 0 else 0.0, "batch_shape": list(want),
        "feature_mean": mean, "feature_std": max(0.0, total_squares / values - mean * mean) ** 0.5 if values else 0.0,
        "peak_rss_kib": peak_rss_kib(), "tf_version": tf.__version__}))


if __name__ == "__main__":
    main()
