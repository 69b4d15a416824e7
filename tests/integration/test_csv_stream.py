"""A csv source read as training goes (issue 27, part 5), with the real
binary: with stream: true (or under stream: auto when the file passes a
quarter of the memory available) the loader keeps only where each row
starts, its label and weight, and each batch's rows are read back from the
file and encoded then. Fitting (fills, vocabularies, class names) takes
aggregates from one pass, never the columns whole. The examples and their
order are those of the file held in memory, so training gives the same
result either way; and the memory does not grow with the columns."""
import json
import re
import subprocess

import numpy as np

from conftest import dtrain_bin, peak_rss_command, read_peak_rss_kib, run_dtrain
from test_csv_text import HEADER, MULTI, rows, write_csv


def test_stream_true_reads_rows_as_training_goes_with_the_same_result(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    rng = np.random.default_rng(5)
    write_csv(d / "train.csv", HEADER, rows(1200, rng))
    write_csv(d / "eval.csv", HEADER, rows(300, rng))
    results = {}
    for stream in ("true", "false"):
        m = tmp_path / f"m-{stream}"
        job = tmp_path / f"{stream}.yaml"
        job.write_text(MULTI.format(d=d, m=m, steps=60, length=24, tok="word", extra=f", stream: {stream}"))
        r = run_dtrain("train", job, "--log-format", "plain")
        assert r.returncode == 0, r.stderr[-3000:]
        if stream == "true":
            assert re.search(r"data\.train: 1 csv file, [0-9.]+ MiB: rows read from the file as training goes "
                             r"\(stream: true\)", r.stderr), r.stderr
        results[stream] = json.loads((m / "eval" / "metrics-60.json").read_text())["metrics"]
        # The same columns learnt either way.
        results[stream + "-pre"] = json.loads((m / "preprocessing.json").read_text())
    assert results["true"] == results["false"]
    assert results["true-pre"] == results["false-pre"]
    assert results["true"]["accuracy"] > 0.6, results


def test_a_csv_read_as_training_goes_holds_its_rows_starts_not_its_columns(tmp_path):
    """200,000 rows of 100 number columns (one with missing values filled by
    its mean, one by its median): held, the columns take 76 MiB as float32;
    read as training goes, 8 bytes of row start and 4 of label per row."""
    rng = np.random.default_rng(11)
    n, k = 200_000, 100
    x = rng.normal(0, 1, (n, k)).round(2)
    label = (x[:, 0] + x[:, 1] > 0).astype(int)
    x[rng.random(n) < 0.05, 2] = np.nan  # written "nan": a missing value (data's na_values)
    x[rng.random(n) < 0.05, 3] = np.nan
    path = tmp_path / "numbers.csv"
    with open(path, "w") as f:
        f.write(",".join(f"x{j}" for j in range(k)) + ",label\n")
        np.savetxt(f, np.column_stack([x, label]), fmt=["%.2f"] * k + ["%d"], delimiter=",")
    columns = ", ".join(["{name: x2, fill: mean}", "{name: x3, fill: median}"] +
                        [f"x{j}" for j in range(k) if j not in (2, 3)])
    peaks = {}
    for stream in ("true", "false"):
        job = tmp_path / f"{stream}.yaml"
        job.write_text(f"""
model:
  input: {{shape: [{k}]}}
  layers: [{{type: dense, units: 2}}]
optimizer: {{type: adam, learning_rate: 0.05}}
data:
  train: {{format: csv, path: {path}, label_column: label, batch_size: 256, shuffle: 10000, stream: {stream},
          columns: [{columns}]}}
run: {{model_dir: {tmp_path / ('m-' + stream)}, max_steps: 30, save_checkpoints_steps: 30, log_step_count_steps: 30,
      seed: 1}}
""")
        report = tmp_path / f"peak-{stream}"
        proc = subprocess.run(peak_rss_command([dtrain_bin(), "train", job, "--no-eval", "--log-format", "plain"],
                                               report), capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "x2 number (fill mean" in proc.stderr and "x3 number (fill median" in proc.stderr, proc.stderr[:3000]
        peaks[stream] = read_peak_rss_kib(report) * 1024
    held = n * k * 4
    print(f"\nnumbers csv: {n} rows x {k} columns ({held / 2**20:.0f} MiB as float32, "
          f"{path.stat().st_size / 2**20:.0f} MiB on disk): peak RSS read as training goes "
          f"{peaks['true'] / 2**20:.0f} MiB, held {peaks['false'] / 2**20:.0f} MiB")
    assert peaks["true"] + held * 0.8 < peaks["false"], peaks
    assert peaks["true"] < 100 * 2**20, peaks
