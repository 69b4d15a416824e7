"""Keras side of bench_data_tasks.py, run by the TensorFlow python (--tf-python) in its own
process: the same two tasks as the dtrain jobs, written as a Keras user would.

  csv:    pandas reads the CSV (BOM, quoting, NA/? missing); age filled with the training mean,
          income with the training median, city and plan one-hot through StringLookup (plan's
          missing values as the most frequent), the grade names through StringLookup; a
          Dense(32, relu) -> Dense(3) network, Adam 0.01, batch 64.
  images: image_dataset_from_directory on class folders of mixed PNG/JPEG (resized to 24x24),
          Rescaling(1/255) -> Conv2D(8, 3, relu) -> MaxPool(2) -> Flatten -> Dense(3),
          Adam 0.003, batch 32.

Trains `--steps` steps, evaluates on the held-out file or folder and prints one JSON line:
{"accuracy", "fit_seconds", "examples"}. Only the lines between the BEGIN/END markers of each
task are the task (bench_data_tasks.py counts them as its lines of code).

    python keras_data_tasks.py csv data/ --steps 2000
    python keras_data_tasks.py images data/ --steps 300
"""
import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402


def csv_task(d, steps):
    # BEGIN csv
    na = ["", "NA", "N/A", "NaN", "nan", "null", "NULL", "?"]
    train = pd.read_csv(f"{d}/train.csv", encoding="utf-8-sig", na_values=na, keep_default_na=False)
    test = pd.read_csv(f"{d}/eval.csv", encoding="utf-8-sig", na_values=na, keep_default_na=False)
    fills = {"age": train["age"].mean(), "income": train["income"].median(),
             "plan": train["plan"].mode()[0]}
    city = keras.layers.StringLookup(output_mode="one_hot")
    city.adapt(train["city"].astype(str).to_numpy())
    plan = keras.layers.StringLookup(output_mode="one_hot")
    plan.adapt(train["plan"].dropna().astype(str).to_numpy())
    grade = keras.layers.StringLookup(num_oov_indices=0)
    grade.adapt(train["grade"].astype(str).to_numpy())

    def features(df):
        df = df.fillna(fills)
        numbers = df[["age", "income", "visits"]].to_numpy(np.float32)
        return np.concatenate([numbers, city(df["city"].astype(str).to_numpy()).numpy(),
                               plan(df["plan"].astype(str).to_numpy()).numpy()], axis=1)

    x, y = features(train), grade(train["grade"].astype(str).to_numpy()).numpy()
    model = keras.Sequential([keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)])
    model.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096, seed=7).repeat().batch(64)
    # END csv
    start = time.perf_counter()
    model.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0)
    fit = time.perf_counter() - start
    _, acc = model.evaluate(features(test), grade(test["grade"].astype(str).to_numpy()).numpy(), batch_size=256, verbose=0)
    return acc, fit, steps * 64


def images_task(d, steps):
    # BEGIN images
    train = keras.utils.image_dataset_from_directory(f"{d}/train", image_size=(24, 24), batch_size=32,
                                                     shuffle=True, seed=3)
    test = keras.utils.image_dataset_from_directory(f"{d}/eval", image_size=(24, 24), batch_size=64,
                                                    shuffle=False)
    model = keras.Sequential([keras.layers.Rescaling(1 / 255), keras.layers.Conv2D(8, 3, activation="relu"),
                              keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dense(3)])
    model.compile(keras.optimizers.Adam(0.003), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    # END images
    start = time.perf_counter()
    model.fit(train.repeat(), steps_per_epoch=steps, epochs=1, verbose=0)
    fit = time.perf_counter() - start
    _, acc = model.evaluate(test, verbose=0)
    return acc, fit, steps * 32


def main():
    p = argparse.ArgumentParser()
    p.add_argument("task", choices=["csv", "images"])
    p.add_argument("data")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    tf.keras.utils.set_random_seed(7)
    acc, fit, examples = (csv_task if a.task == "csv" else images_task)(a.data, a.steps)
    print(json.dumps({"accuracy": float(acc), "fit_seconds": fit, "examples": examples}))


if __name__ == "__main__":
    main()
