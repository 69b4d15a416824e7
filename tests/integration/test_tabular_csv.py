"""A CSV as users have it, with the real binary (issue 27, part 2).

The file has a UTF-8 BOM, CRLF line ends, a header, quoted fields holding the
delimiter, number columns with missing values (empty, NA, ?), category columns
of strings and a label column of class names. dtrain learns the categories,
fills and class names from data.train, saves them in model_dir/preprocessing.json,
trains well above the majority-class baseline on a held-out file, and predict
reads new CSV rows (no label column, categories never seen in training,
missing values) exactly as training read its rows: the same probabilities as
the rows one-hot encoded by NumPy from the saved file, and on the held-out file
the same accuracy as evaluate. A job whose columns change under a checkpoint
is refused; a first run that fails leaves nothing that binds the next."""
import csv
import io
import json
from collections import Counter

import numpy as np
import pytest

from conftest import run_dtrain

CITIES = ["Lyon", "Paris", "Saint-Denis, FR", "Nice", "Brest", "Metz"]
CITY_EFFECT = [1.6, -1.2, 0.9, 0.0, -0.4, 0.3]
PLANS = ["basic", "plus", "pro"]
PLAN_EFFECT = [-0.9, 0.1, 1.2]
CLASSES = ["high", "low", "mid"]  # sorted: the class ids dtrain gives the names

JOB = """
model:
  input: {{shape: [{width}]}}
  layers:
    - {{type: dense, units: 32, activation: relu}}
    - {{type: dense, units: 3}}
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.01}}
data:
  train: {{format: csv, path: {d}/train.csv, label_column: grade, batch_size: 64, shuffle: 4096, columns: {columns}}}
  eval: {{format: csv, path: {d}/eval.csv, label_column: grade, batch_size: 256}}
run: {{max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 100, seed: 7}}
"""

COLUMNS = ("[{name: age, fill: mean}, {name: income, fill: median}, {name: city, type: category}, "
           "{name: plan, type: category, fill: most_frequent}, visits]")
WIDTH = 1 + 1 + (1 + 6) + (1 + 3) + 1  # age, income, city one-hot, plan one-hot, visits


def rows(n, rng, with_label=True, cities=CITIES):
    """Rows whose grade follows age, income, city and plan (with noise);
    about 10% of numbers missing, written as '', 'NA' or '?'."""
    age = rng.normal(40, 12, n)
    income = rng.lognormal(3.0, 0.5, n)
    city = rng.integers(0, len(cities), n)
    plan = rng.integers(0, 3, n)
    visits = rng.poisson(3, n)
    effect = np.array([CITY_EFFECT[c % len(CITY_EFFECT)] for c in city])
    score = 0.06 * (age - 40) + 0.08 * (income - 22) + effect + np.array(PLAN_EFFECT)[plan] + rng.normal(0, 0.3, n)
    grade = np.where(score > 0.8, "high", np.where(score < -0.6, "low", "mid"))
    out = []
    for i in range(n):
        a = "" if rng.random() < 0.08 else f"{age[i]:.1f}"
        inc = ("NA" if rng.random() < 0.5 else "?") if rng.random() < 0.08 else f"{income[i]:.2f}"
        p = "" if rng.random() < 0.05 else PLANS[plan[i]]
        row = [a, inc, cities[city[i]], p, str(visits[i])]
        out.append(row + [grade[i]] if with_label else row)
    return out


def write_csv(path, header, body):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")  # quotes "Saint-Denis, FR"
    w.writerow(header)
    w.writerows(body)
    path.write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode())


HEADER = ["age", "income", "city", "plan", "visits", "grade"]


def make_data(d, seed=0):
    rng = np.random.default_rng(seed)
    d.mkdir(exist_ok=True)
    train, ev = rows(2000, rng), rows(600, rng)
    write_csv(d / "train.csv", HEADER, train)
    write_csv(d / "eval.csv", HEADER, ev)
    return train, ev


def write_job(tmp_path, d, steps=300, columns=COLUMNS, width=WIDTH):
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(d=d, steps=steps, columns=columns, width=width))
    return job


def encode(rows_, saved):
    """The features of `rows_` (lists of strings in HEADER order) as the saved
    preprocessing says, computed here with NumPy."""
    cols = {c["name"]: c for c in saved["columns"]}
    feats = []
    for r in rows_:
        f = []
        for name in ["age", "income", "city", "plan", "visits"]:
            c, v = cols[name], r[HEADER.index(name)].strip()
            missing = v in ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "?")
            if c["type"] == "category":
                one = np.zeros(len(c["categories"]) + 1, np.float32)
                one[c["fill_id"] if missing else (c["categories"].index(v) + 1 if v in c["categories"] else 0)] = 1
                f.extend(one)
            else:
                f.append(np.float32(c["fill_value"]) if missing else np.float32(float(v)))
        feats.append(f)
    return np.array(feats, np.float32)


def read_predictions(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_csv_with_categories_missing_values_and_names_trains_and_predicts_as_trained(tmp_path):
    d = tmp_path / "data"
    train_rows, eval_rows = make_data(d)
    job = write_job(tmp_path, d)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m", "--log-format", "plain")
    assert r.returncode == 0, r.stderr[-3000:]

    # What was learnt from data.train, said once and saved beside the checkpoints.
    saved = json.loads((tmp_path / "m" / "preprocessing.json").read_text())
    ages = np.array([float(x[0]) for x in train_rows if x[0] != ""])
    incomes = np.array([float(x[1]) for x in train_rows if x[1] not in ("NA", "?")])
    age, income, city, plan, visits = saved["columns"]
    assert abs(age["fill_value"] - ages.mean()) < 1e-4 * ages.mean()
    assert abs(income["fill_value"] - np.median(incomes)) < 1e-5 * np.median(incomes)
    counts = Counter(x[2] for x in train_rows)
    assert city["categories"] == sorted(counts, key=lambda c: (-counts[c], c))
    plan_counts = Counter(x[3] for x in train_rows if x[3])
    assert plan["categories"] == sorted(plan_counts, key=lambda c: (-plan_counts[c], c)) and plan["fill_id"] == 1
    assert visits == {"name": "visits", "type": "number"}
    assert saved["label"] == {"column": "grade", "classes": CLASSES}
    assert (f"data.train: 5 columns -> {WIDTH} features: age number (fill mean " in r.stderr
            and "city category (6 values + unknown)" in r.stderr
            and 'label "grade": 3 classes (high, low, mid)\n' in r.stderr
            and "data.train: saved what its columns learnt (vocabularies, fills, class names) to " in r.stderr), r.stderr

    # Held-out accuracy, well above the majority class; the report names the classes.
    m = json.loads((tmp_path / "m" / "eval" / "metrics-300.json").read_text())
    majority = max(Counter(x[-1] for x in eval_rows).values()) / len(eval_rows)
    acc = m["metrics"]["accuracy"]
    print(f"tabular csv: eval accuracy {acc:.4f} on {len(eval_rows)} held-out rows "
          f"(majority baseline {majority:.4f}), loss {m['metrics']['loss']:.4f}")
    assert m["examples"] == 600
    assert acc >= majority + 0.2, (acc, majority)
    assert m["report"]["outputs"][0]["classes"] == CLASSES

    # predict on the held-out file (its label column ignored): the same
    # accuracy as evaluate's, row for row.
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", d / "eval.csv",
                   "--output", tmp_path / "eval_pred.csv")
    assert r.returncode == 0, r.stderr
    pred = read_predictions(tmp_path / "eval_pred.csv")
    assert list(pred[0]) == ["class", "class_name", "phigh", "plow", "pmid"]
    right = sum(p["class_name"] == x[-1] for p, x in zip(pred, eval_rows))
    assert len(pred) == 600 and abs(right / 600 - acc) < 1e-6, (right, acc)

    # JSON lines name the class and each probability.
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", d / "eval.csv",
                   "--output", tmp_path / "eval_pred.jsonl")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in (tmp_path / "eval_pred.jsonl").read_text().splitlines()]
    assert len(lines) == 600 and list(lines[0]) == ["class", "class_name", "probabilities"]
    assert [x["class_name"] for x in lines] == [p["class_name"] for p in pred]
    assert list(lines[0]["probabilities"]) == CLASSES
    assert lines[0]["probabilities"]["mid"] == pytest.approx(float(pred[0]["pmid"]), abs=1e-6)

    # New rows: no label column, columns in another order, cities never seen
    # in training, missing values: predicted from the NumPy encoding of the
    # saved preprocessing, to float32 rounding.
    rng = np.random.default_rng(1)
    new = rows(50, rng, with_label=False, cities=CITIES + ["Atlantis", "Ys"])
    order = [4, 2, 0, 3, 1]
    write_csv(d / "new.csv", [HEADER[k] for k in order], [[x[k] for k in order] for x in new])
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", d / "new.csv",
                   "--output", tmp_path / "new_pred.csv")
    assert r.returncode == 0, r.stderr
    np.save(tmp_path / "new.npy", encode(new, saved))
    r = run_dtrain("predict", job, "--model-dir", tmp_path / "m", "--input", tmp_path / "new.npy",
                   "--output", tmp_path / "new_npy.csv")
    assert r.returncode == 0, r.stderr
    a, b = read_predictions(tmp_path / "new_pred.csv"), read_predictions(tmp_path / "new_npy.csv")
    assert len(a) == 50 and sum(x[2] in ("Atlantis", "Ys") for x in new) > 0
    assert [x["class_name"] for x in a] == [CLASSES[int(x["class"])] for x in b]
    pa = np.array([[float(x[f"p{c}"]) for c in CLASSES] for x in a])
    pb = np.array([[float(x[f"p{k}"]) for k in range(3)] for x in b])
    np.testing.assert_allclose(pa, pb, atol=1e-6)


def test_changed_columns_under_a_checkpoint_are_refused_and_a_failed_first_run_binds_nothing(tmp_path):
    d = tmp_path / "data"
    make_data(d)
    # A first run that fails: plan read as a number.
    wrong = COLUMNS.replace("{name: plan, type: category, fill: most_frequent}", "plan")
    job = write_job(tmp_path, d, steps=20, columns=wrong, width=WIDTH - 3)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m")
    assert r.returncode == 3, r.stderr
    assert 'cannot parse "basic" as a number (column "plan"); if the column holds names, give it type category' in r.stderr
    # Then one whose model reads the wrong width: the error says what the columns give.
    job = write_job(tmp_path, d, steps=20, width=WIDTH - 1)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m")
    assert r.returncode == 2, r.stderr
    assert f"the columns give 5 columns -> {WIDTH} features" in r.stderr, r.stderr
    # The corrected job trains.
    job = write_job(tmp_path, d, steps=20)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m")
    assert r.returncode == 0, r.stderr[-2000:]
    saved = (tmp_path / "m" / "preprocessing.json").read_text()

    # Resuming with a column's type changed would change the features.
    changed = COLUMNS.replace("visits]", "{name: visits, type: category}]")
    job = write_job(tmp_path, d, steps=40, columns=changed)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m")
    assert r.returncode == 2, r.stderr
    assert "the columns saved with the model do not match this job's (column 4: " in r.stderr, r.stderr
    assert (tmp_path / "m" / "preprocessing.json").read_text() == saved

    # Resuming as before reads the saved columns, even when data.train changed.
    make_data(d, seed=5)
    job = write_job(tmp_path, d, steps=40)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m", "--log-format", "plain")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "data.train: columns read as saved with the model in " in r.stderr
    assert (tmp_path / "m" / "preprocessing.json").read_text() == saved


def test_label_names_not_seen_in_training_are_located_data_errors(tmp_path):
    d = tmp_path / "data"
    make_data(d)
    text = (d / "eval.csv").read_bytes().decode()
    lines = text.split("\r\n")
    lines[3] = lines[3].rsplit(",", 1)[0] + ",medium"
    (d / "eval.csv").write_text("\r\n".join(lines))
    job = write_job(tmp_path, d, steps=10)
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m")
    assert r.returncode == 3, r.stderr
    assert (f'{d / "eval.csv"}:4:6: label "medium" (column "grade") is not one of the 3 classes of data.train: '
            "high, low, mid") in r.stderr, r.stderr
