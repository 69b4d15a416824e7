"""CSV text columns and category ids, with the real binary (issue 27, parts 2
and 3): a CSV of product reviews (quoted text holding commas and quotes,
missing reviews), a product category given to the model as its id, a price,
and a label of class names. Text columns are tokenized (word, or a
SentencePiece model trained by `dtrain data sentencepiece`) into max_length
token ids with a vocabulary built from data.train's values and saved in
model_dir/preprocessing.json; `input_dim: auto` and `units: auto` are read
from it. A model of three inputs gets each column through `input:`; predict
on new rows (unseen words and products) gives class names, and on the
held-out file the accuracy evaluate reports."""
import csv
import io
import json
import re

import numpy as np

from conftest import run_dtrain

CLASSES = ["bad", "good", "okay"]  # sorted: the class ids dtrain gives the names
PRODUCTS = ["kettle", "toaster", "blender", "mixer", "grill"]
PRODUCT_EFFECT = [0.8, -0.8, 0.0, 0.4, -0.4]
GOOD = "great excellent love perfect sturdy quiet fast reliable".split()
BAD = "broken awful refund noisy flimsy slow leaking returned".split()
SHARED = "the it this and was a to of with for my is very after one week but".split()


def review(rng, score):
    words = []
    for _ in range(int(rng.integers(6, 20))):
        u = rng.random()
        if u < 0.25:
            words.append(str(rng.choice(GOOD if score > 0 else BAD)))
        else:
            words.append(str(rng.choice(SHARED)))
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    return text + rng.choice([".", "!", ', "really".', ", honestly,"])


def rows(n, rng, with_label=True, products=PRODUCTS):
    out = []
    for _ in range(n):
        p = int(rng.integers(0, len(products)))
        price = float(rng.uniform(10, 100))
        mood = rng.choice([-1, 1])
        score = mood * 1.2 + PRODUCT_EFFECT[p % len(PRODUCT_EFFECT)] + 0.01 * (price - 55) + rng.normal(0, 0.3)
        label = "good" if score > 0.7 else "bad" if score < -0.7 else "okay"
        text = "" if rng.random() < 0.03 else review(rng, mood)
        row = [text, products[p], f"{price:.2f}"]
        out.append(row + [label] if with_label else row)
    return out


def write_csv(path, header, body):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header] + body)
    path.write_text(buf.getvalue(), encoding="utf-8")


HEADER = ["review", "product", "price", "sentiment"]

MULTI = """
model:
  inputs:
    words: {{shape: [{length}], dtype: int32}}
    product: {{shape: [1], dtype: int32}}
    price: {{shape: [1]}}
  layers:
    - {{name: embed, type: embedding, input_dim: auto, output_dim: 16, inputs: words}}
    - {{name: pooled, type: global_avg_pool1d}}
    - {{name: product_embed, type: embedding, input_dim: auto, output_dim: 4, inputs: product}}
    - {{name: product_flat, type: flatten}}
    - {{name: price_scaled, type: dense, units: 4, activation: relu, inputs: price}}
    - {{name: both, type: concatenate, inputs: [pooled, product_flat, price_scaled]}}
    - {{name: hidden, type: dense, units: 16, activation: relu}}
    - {{name: logits, type: dense, units: auto}}
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.02}}
data:
  train: {{format: csv, path: {d}/train.csv, label_column: sentiment, batch_size: 64, shuffle: 4096, max_length: {length},
          tokenizer: {tok}{extra}, na_values: [""],
          columns: [{{name: review, type: text, input: words}}, {{name: product, type: category, encoding: id, input: product}},
                    {{name: price, input: price}}]}}
  eval: {{format: csv, path: {d}/eval.csv, label_column: sentiment, batch_size: 256}}
run: {{model_dir: {m}, max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 1000, seed: 7}}
"""

SINGLE = """
model:
  input: {{shape: [{length}], dtype: int32}}
  layers:
    - {{type: embedding, input_dim: auto, output_dim: 16}}
    - {{type: global_avg_pool1d}}
    - {{type: dense, units: auto}}
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.02}}
data:
  train: {{format: csv, path: {d}/train.csv, label_column: sentiment, batch_size: 64, shuffle: 4096, max_length: {length},
          columns: [{{name: review, type: text}}], na_values: [""]}}
  eval: {{format: csv, path: {d}/eval.csv, label_column: sentiment, batch_size: 256}}
run: {{model_dir: {m}, max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 1000, seed: 7}}
"""


def make_data(d, seed=0):
    rng = np.random.default_rng(seed)
    d.mkdir()
    write_csv(d / "train.csv", HEADER, rows(1500, rng))
    write_csv(d / "eval.csv", HEADER, rows(400, rng))


def eval_metrics(m, steps):
    return json.loads((m / "eval" / f"metrics-{steps}.json").read_text())


def majority(path):
    labels = [r["sentiment"] for r in csv.DictReader(open(path, encoding="utf-8"))]
    return max(labels.count(c) for c in set(labels)) / len(labels)


def word_tokens(text):
    """The documented word tokenizer, for ASCII text: lower-cased runs of
    letters, digits and apostrophes, apostrophes at the ends removed."""
    return [t.strip("'") for t in re.findall(r"[a-z0-9']+", text.lower()) if t.strip("'")]


def test_text_column_alone_trains_and_its_vocabulary_is_the_documented_one(tmp_path):
    d, m = tmp_path / "data", tmp_path / "m"
    make_data(d)
    job = tmp_path / "single.yaml"
    job.write_text(SINGLE.format(d=d, m=m, length=24, steps=200))
    r = run_dtrain("train", job, "--log-format", "plain")
    assert r.returncode == 0, r.stderr[-3000:]
    pre = json.loads((m / "preprocessing.json").read_text(encoding="utf-8"))
    (col,) = pre["columns"]
    assert col["type"] == "text" and col["max_length"] == 24
    vocab = col["vocabulary"]
    # The vocabulary, rebuilt here from the training file with the documented
    # tokenizer: every token by count, most frequent first, ties by token.
    counts = {}
    for row in csv.DictReader(open(d / "train.csv", encoding="utf-8")):
        for t in word_tokens(row["review"]):
            counts[t] = counts.get(t, 0) + 1
    expected = ["<pad>", "<unk>"] + sorted(counts, key=lambda t: (-counts[t], t))
    assert vocab["tokenizer"] == "word" and vocab["tokens"] == expected
    assert f"model: embedding input_dim: auto = {len(expected)} (the ids of the csv columns of the model's input, " \
           "data.train's file)" in r.stderr, r.stderr
    assert "model: dense units: auto = 3 (the label's class names in data.train's file)" in r.stderr
    metrics = eval_metrics(m, 200)
    acc, base = metrics["metrics"]["accuracy"], majority(d / "eval.csv")
    print(f"csv text column alone: eval accuracy {acc:.4f} (majority baseline {base:.4f})")
    assert acc >= base + 0.1, (acc, base)


def test_text_category_id_and_number_columns_feed_three_model_inputs(tmp_path):
    d, m = tmp_path / "data", tmp_path / "m"
    make_data(d)
    job = tmp_path / "multi.yaml"
    job.write_text(MULTI.format(d=d, m=m, length=24, steps=300, tok="word", extra=""))
    r = run_dtrain("train", job, "--log-format", "plain")
    assert r.returncode == 0, r.stderr[-3000:]
    pre = json.loads((m / "preprocessing.json").read_text(encoding="utf-8"))
    review, product, price = pre["columns"]
    assert review["input"] == "words" and review["type"] == "text"
    assert product["encoding"] == "id" and product["input"] == "product"
    assert sorted(product["categories"]) == sorted(PRODUCTS)
    assert price == {"name": "price", "type": "number", "input": "price"}
    assert pre["label"]["classes"] == CLASSES
    size = review["vocabulary"]["size"]
    assert f"model: embed input_dim: auto = {size} (the ids of the csv columns of model input words" in r.stderr
    assert "model: product_embed input_dim: auto = 6 (the ids of the csv columns of model input product" in r.stderr
    assert "review text (word tokens, 24 ids" in r.stderr and "product category id (5 values + unknown)" in r.stderr
    metrics = eval_metrics(m, 300)
    acc, base = metrics["metrics"]["accuracy"], majority(d / "eval.csv")
    print(f"csv text + category id + number (3 inputs): eval accuracy {acc:.4f} (majority baseline {base:.4f})")
    assert acc >= base + 0.15, (acc, base)

    # predict on the held-out file: the accuracy evaluate reported.
    r = run_dtrain("predict", job, "--input", d / "eval.csv", "--output", tmp_path / "p.csv")
    assert r.returncode == 0, r.stderr
    got = [l.split(",") for l in (tmp_path / "p.csv").read_text().splitlines()[1:]]
    truth = [row["sentiment"] for row in csv.DictReader(open(d / "eval.csv", encoding="utf-8"))]
    right = sum(g[1] == t for g, t in zip(got, truth))
    assert abs(right / len(truth) - acc) < 1e-6, (right, acc)

    # New rows: no label column, a product never seen, words never seen.
    rng = np.random.default_rng(5)
    new = rows(40, rng, with_label=False, products=PRODUCTS + ["waffle iron"])
    new[0][0] = "Zyxwv qwerty, completely unseen words"
    write_csv(tmp_path / "new.csv", HEADER[:3], new)
    r = run_dtrain("predict", job, "--input", tmp_path / "new.csv", "--output", tmp_path / "new.jsonl")
    assert r.returncode == 0, r.stderr
    preds = [json.loads(l) for l in (tmp_path / "new.jsonl").read_text().splitlines()]
    assert len(preds) == 40 and all(p["class_name"] in CLASSES for p in preds)

    # Resuming with another tokenizer or max_length is refused: the features would change.
    r = run_dtrain("train", job, "--set", "data.train.tokenizer=char", "--set", "run.max_steps=310", "--no-eval")
    assert r.returncode == 2, r.stderr
    assert "text column review: " in r.stderr and "has tokenizer word, the job char" in r.stderr, r.stderr


def test_sentencepiece_text_column(tmp_path):
    d, m = tmp_path / "data", tmp_path / "m"
    make_data(d)
    corpus = tmp_path / "reviews.txt"
    corpus.write_text("\n".join(r["review"] for r in csv.DictReader(open(d / "train.csv", encoding="utf-8"))),
                      encoding="utf-8")
    sp = tmp_path / "reviews.model"
    r = run_dtrain("data", "sentencepiece", corpus, "--vocab-size", "120", "--out", sp)
    assert r.returncode == 0, r.stderr
    job = tmp_path / "multi.yaml"
    job.write_text(MULTI.format(d=d, m=m, length=48, steps=300, tok="sentencepiece", extra=f", sentencepiece_model: {sp}"))
    r = run_dtrain("train", job, "--log-format", "plain")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (m / "sentencepiece.model").read_bytes() == sp.read_bytes()
    pre = json.loads((m / "preprocessing.json").read_text(encoding="utf-8"))
    assert pre["columns"][0]["vocabulary"]["tokenizer"] == "sentencepiece"
    metrics = eval_metrics(m, 300)
    acc, base = metrics["metrics"]["accuracy"], majority(d / "eval.csv")
    print(f"csv text column (sentencepiece) + category id + number: eval accuracy {acc:.4f} (majority {base:.4f})")
    assert acc >= base + 0.15, (acc, base)
    sp.unlink()  # evaluate needs only the model_dir
    r = run_dtrain("evaluate", job)
    assert r.returncode == 0, r.stderr


def test_csv_text_errors_are_located(tmp_path):
    d, m = tmp_path / "data", tmp_path / "m"
    make_data(d)
    job = tmp_path / "multi.yaml"
    job.write_text(MULTI.format(d=d, m=m, length=24, steps=2, tok="word", extra=""))
    # A column without input in a model of several inputs.
    bad = job.read_text().replace("{name: price, input: price}", "price")
    (tmp_path / "bad1.yaml").write_text(bad)
    r = run_dtrain("train", tmp_path / "bad1.yaml", "--no-eval")
    assert r.returncode == 2, r.stderr
    assert "columns[2] (price): no input, but the model has several inputs; give each column the model input it " \
           "feeds: input: one of words, product, price" in r.stderr, r.stderr
    # encoding on a number column.
    bad = job.read_text().replace("{name: price, input: price}", "{name: price, input: price, encoding: id}")
    (tmp_path / "bad2.yaml").write_text(bad)
    r = run_dtrain("train", tmp_path / "bad2.yaml", "--no-eval")
    assert r.returncode == 2 and "encoding \"id\" applies to type category, not number" in r.stderr, r.stderr
    # A text column without max_length.
    bad = job.read_text().replace(" max_length: 24,", "")
    (tmp_path / "bad3.yaml").write_text(bad)
    r = run_dtrain("train", tmp_path / "bad3.yaml", "--no-eval")
    assert r.returncode == 2 and "a text column needs data's max_length" in r.stderr, r.stderr
    # An embedding too small for a column's ids: the id is named in the file, in its input's column.
    bad = job.read_text().replace("name: product_embed, type: embedding, input_dim: auto",
                                  "name: product_embed, type: embedding, input_dim: 3")
    (tmp_path / "bad4.yaml").write_text(bad)
    r = run_dtrain("train", tmp_path / "bad4.yaml", "--no-eval")
    assert r.returncode == 3, r.stderr
    assert re.search(rf"{d}/train.csv:\d+:2 \(column \"product\"\): id [345] of model.inputs.product is out of range "
                     r"for layer \"product_embed\" \(input_dim 3: ids 0..2\)", r.stderr), r.stderr
    # Invalid UTF-8 in a text field: file, line and column.
    text = (d / "train.csv").read_bytes()
    line = text.count(b"\n") + 1
    (d / "train.csv").write_bytes(text + b"caf\xe9 ole,kettle,10.00,good\n")
    r = run_dtrain("train", job, "--no-eval")
    assert r.returncode == 3, r.stderr
    assert f"{d}/train.csv:{line}:1: invalid UTF-8 at byte 3 of the field (column \"review\")" in r.stderr, r.stderr


def test_a_wide_one_hot_csv_is_encoded_batch_by_batch_in_little_memory(tmp_path):
    """200,000 rows of a category of 2,000 values: one-hot float32 features
    held whole would take 1.5 GiB; the columns are kept as ids and encoded
    per batch."""
    from conftest import dtrain_bin, peak_rss_command, read_peak_rss_kib
    import subprocess
    rng = np.random.default_rng(3)
    n, k = 200_000, 2000
    item = rng.integers(0, k, n)
    x = rng.normal(0, 1, n)
    label = ((item % 2) ^ (x > 0)).astype(int)
    path = tmp_path / "wide.csv"
    with open(path, "w") as f:
        f.write("item,x,label\n")
        f.writelines(f"i{a},{b:.3f},{c}\n" for a, b, c in zip(item, x, label))
    job = tmp_path / "wide.yaml"
    job.write_text(f"""
model:
  input: {{shape: [{k + 2}]}}
  layers: [{{type: dense, units: 2}}]
optimizer: {{type: adam, learning_rate: 0.05}}
data:
  train: {{format: csv, path: {path}, label_column: label, batch_size: 256, shuffle: 10000,
          columns: [{{name: item, type: category}}, x]}}
run: {{model_dir: {tmp_path / 'm'}, max_steps: 100, save_checkpoints_steps: 100, log_step_count_steps: 50, seed: 1}}
""")
    report = tmp_path / "peak-rss"
    proc = subprocess.run(peak_rss_command([dtrain_bin(), "train", job, "--no-eval", "--log-format", "plain"], report),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"item category ({k} values + unknown)" in proc.stderr, proc.stderr[:3000]
    peak = read_peak_rss_kib(report) * 1024
    whole = n * (k + 2) * 4
    print(f"\nwide csv: {n} rows x {k + 2} one-hot features ({whole / 2**20:.0f} MiB as float32): "
          f"peak RSS {peak / 2**20:.0f} MiB")
    assert peak < 300 * 2**20
