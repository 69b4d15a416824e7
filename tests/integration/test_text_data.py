"""Sequence data through the real binary: a character model trained on a
license text from /usr/share/common-licenses with a (B, T, V) output, its
vocabulary saved in model_dir and held to on resume and evaluate, the unigram
entropy printed at start-up, and the data errors of text files; the
synthetic_sequence source trains end to end."""
import json
import math
from pathlib import Path

import pytest

from conftest import run_dtrain

LICENSE = Path("/usr/share/common-licenses/GPL-3")
T = 32

TEXT_JOB = """
model:
  input: {{shape: [{t}], dtype: int32}}
  layers:
    - {{type: embedding, input_dim: {v}, output_dim: {v}}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy, mean_loss]
optimizer: {{type: adam, learning_rate: 0.05}}
data:
  train: {{format: text, files: {files}, sequence_length: {t}, holdout: 0.1, batch_size: 16, shuffle: 10000}}
  eval: {{format: text, files: {files}, sequence_length: {t}, holdout: 0.1, split: holdout, batch_size: 64}}
run:
  model_dir: {model_dir}
  max_steps: {steps}
  save_checkpoints_steps: {steps}
  save_summary_steps: 5
  log_step_count_steps: 5
  seed: 3
eval: {{throttle_secs: 0}}
"""


def text_job(tmp_path, files, vocab_size, steps=40, name="text.yaml"):
    model_dir = tmp_path / "run"
    job = tmp_path / name
    job.write_text(TEXT_JOB.format(t=T, v=vocab_size, files=files, model_dir=model_dir, steps=steps))
    return job, model_dir


def logged_losses(stderr):
    """The loss of each plain-format step line ("step 5/40 loss 3.21 ...")."""
    out = []
    for line in stderr.splitlines():
        words = line.split()
        if words[:1] == ["step"] and "loss" in words:
            out.append(float(words[words.index("loss") + 1]))
    return out


def test_character_model_on_a_license_text(tmp_path):
    text = LICENSE.read_text(encoding="utf-8")
    symbols = sorted(set(text))
    job, model_dir = text_job(tmp_path, LICENSE, len(symbols) + 1)
    out = run_dtrain("train", job, "--log-format", "plain")
    assert out.returncode == 0, out.stderr

    # The vocabulary: sorted distinct characters of the training files, then <unk>.
    vocab = json.loads((model_dir / "vocab.json").read_text(encoding="utf-8"))
    assert vocab["unit"] == "char" and vocab["files"] == [str(LICENSE)]
    assert vocab["symbols"] == symbols
    assert vocab["size"] == len(symbols) + 1 and vocab["unk_id"] == len(symbols)
    assert f"wrote the vocabulary of data.train to {model_dir}/vocab.json: {len(symbols) + 1} ids" in out.stderr

    # The unigram entropy of the training part (the text before the held-out 10%), as printed.
    train_part = text[: len(text) - int(0.1 * len(text))]
    counts = {}
    for ch in train_part:
        counts[ch] = counts.get(ch, 0) + 1
    entropy = -sum(c / len(train_part) * math.log(c / len(train_part)) for c in counts.values())
    windows = (len(train_part) - T - 1) // T + 1
    expected = (f"data.train: text: {len(text)} chars in 1 file, the part before the held-out last 10%: "
                f"{len(train_part)} chars -> {windows} windows of {T} (stride {T}); vocabulary {len(symbols) + 1} ids "
                f"({len(symbols)} chars + <unk>); unigram entropy {entropy:.4f} nats/token over {len(counts)} symbols")
    assert expected in out.stderr.splitlines()

    losses = logged_losses(out.stderr)
    assert len(losses) == 8, out.stderr
    assert losses[0] > losses[-1] + 0.3, losses  # from about ln(77) = 4.3 toward the unigram entropy

    # Evaluation on the held-out end: every window of it, loss and accuracy over every position.
    held = len(text) - len(train_part)
    metrics = json.loads((model_dir / "eval" / "metrics.json").read_text())
    assert metrics["global_step"] == 40
    assert metrics["examples"] == (held - T - 1) // T + 1
    assert 0.0 < metrics["metrics"]["accuracy"] < 1.0
    assert metrics["metrics"]["loss"] == pytest.approx(metrics["metrics"]["mean_loss"], rel=1e-6)
    ev = run_dtrain("evaluate", job)
    assert ev.returncode == 0, ev.stderr
    assert f"loss: {metrics['metrics']['loss']:.6f}" in ev.stdout

    # Resuming uses the saved vocabulary (same files: no error) and continues.
    more = run_dtrain("train", job, "--set", "run.max_steps=50", "--no-eval", "--log-format", "plain")
    assert more.returncode == 0, more.stderr
    assert "resuming from" in more.stderr and "wrote the vocabulary" not in more.stderr


def test_a_saved_vocabulary_that_does_not_match_is_an_error(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("abcabcabc" * 20)
    b.write_text("abcabczab" * 20)
    job, model_dir = text_job(tmp_path, a, 4, steps=2)
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    saved = (model_dir / "vocab.json").read_bytes()
    out = run_dtrain("train", job, "--no-eval", "--set", f"data.train.files={b}", "--set", "run.max_steps=4",
                     cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        f"dtrain: {job}:10:10: data.train: the vocabulary saved with the model does not match this job's text "
        f"({model_dir}/vocab.json has 3 chars, data.train's files 4: 1 not in {model_dir}/vocab.json ('z')), so "
        f"token ids would change; train in a new run.model_dir (or --model-dir), or use the files and unit it was "
        f"built from (char: {a})\n")
    out = run_dtrain("train", job, "--no-eval", "--set", "data.train.unit=byte", "--set", "run.max_steps=4")
    assert out.returncode == 2, out.stderr
    assert f"({model_dir}/vocab.json has unit char, data.train's files unit byte)" in out.stderr
    # Nothing was overwritten, and the original job still resumes.
    assert (model_dir / "vocab.json").read_bytes() == saved
    assert run_dtrain("train", job, "--no-eval", "--set", "run.max_steps=4").returncode == 0


def test_a_vocabulary_without_a_checkpoint_binds_nothing_and_input_dim_auto_reads_the_saved_one(tmp_path):
    # What a first run that failed before its first checkpoint leaves: a
    # vocab.json of other text. The corrected run rebuilds and overwrites it.
    a = tmp_path / "a.txt"
    a.write_text("abcabcabc" * 20)
    job, model_dir = text_job(tmp_path, a, 4, steps=2)
    job.write_text(job.read_text().replace(
        "    - {type: embedding, input_dim: 4, output_dim: 4}",
        "    - {type: embedding, input_dim: auto, output_dim: 8}\n    - {type: dense, units: auto}"))
    model_dir.mkdir()
    (model_dir / "vocab.json").write_text(json.dumps(
        {"dtrain_vocabulary": 1, "unit": "char", "size": 3, "unk_id": 2, "files": ["old.txt"], "symbols": ["x", "y"]}))
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 0, out.stderr
    assert "model: embedding input_dim: auto = 4 (the vocabulary of data.train's files)" in out.stderr
    assert "model: dense units: auto = 4 (the vocabulary of data.train's files)" in out.stderr
    assert json.loads((model_dir / "vocab.json").read_text())["symbols"] == ["a", "b", "c"]
    # With a checkpoint, input_dim: auto reads the saved vocabulary, whatever the files hold now.
    a.write_text("abcdabcd" * 60)
    out = run_dtrain("evaluate", job)
    assert out.returncode == 0, out.stderr
    assert f"model: embedding input_dim: auto = 4 (the vocabulary of {model_dir}/vocab.json)" in out.stderr


def test_evaluate_reads_other_text_with_unk(tmp_path):
    a, other = tmp_path / "a.txt", tmp_path / "other.txt"
    a.write_text("abcabcabc" * 20)
    other.write_text("abcxyz" * 30)
    job, model_dir = text_job(tmp_path, a, 4, steps=2)
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    out = run_dtrain("evaluate", job, "--set", f"data.eval.files={other}", "--set", "data.eval.split=train",
                     "--set", "data.eval.holdout=0")
    assert out.returncode == 0, out.stderr
    assert json.loads((model_dir / "eval" / "metrics.json").read_text())["examples"] == (180 - T - 1) // T + 1


def test_model_output_smaller_than_the_vocabulary_is_a_config_error(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("abcdefgh" * 20)
    job, model_dir = text_job(tmp_path, a, 5, steps=2)
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 2, out.stderr
    assert out.stderr == (f"dtrain: {job}:10:10: data.train: the vocabulary has 9 ids (8 chars + <unk>) but the model "
                          f"output [{T}, 5] has 5 classes; give the last layer 9 units\n")
    assert not (model_dir / "vocab.json").exists()


def test_invalid_utf8_is_a_data_error_with_the_offset(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"plain ascii then \xe9t\xe9 in latin-1" * 10)
    job, model_dir = text_job(tmp_path, bad, 30, steps=2)
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 3, out.stderr
    assert out.stderr == (f"dtrain: {bad}: invalid UTF-8 at byte offset 17: bytes 0xe9 0x74 are not a valid "
                          f"character; unit: char reads UTF-8 text (unit: byte reads any file)\n")
    assert not (model_dir / "vocab.json").exists()
    out = run_dtrain("train", job, "--no-eval", "--set", "data.train.unit=byte", "--set", "data.eval.unit=byte")
    assert out.returncode == 0, out.stderr
    assert json.loads((model_dir / "vocab.json").read_text())["unit"] == "byte"


SEQUENCE_JOB = """
model:
  input: {{shape: [8], dtype: int32}}
  layers:
    - {{type: embedding, input_dim: 10, output_dim: 4}}
    - {{type: flatten}}
    - {{type: dense, units: 16, activation: relu}}
    - {{type: dense, units: 2}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.01}}
data:
  train: {{format: synthetic_sequence, synthetic_sequence: {{task: is_sorted, vocab_size: 10, sequence_length: 8,
           num_examples: 512}}, batch_size: 32, shuffle: 512}}
  eval: {{format: synthetic_sequence, synthetic_sequence: {{task: is_sorted, vocab_size: 10, sequence_length: 8,
          num_examples: 256, seed: 1}}, batch_size: 64}}
run: {{model_dir: {model_dir}, max_steps: 20, save_checkpoints_steps: 20}}
"""


def test_synthetic_sequence_trains_and_evaluates(tmp_path):
    job = tmp_path / "seq.yaml"
    job.write_text(SEQUENCE_JOB.format(model_dir=tmp_path / "run"))
    out = run_dtrain("train", job)
    assert out.returncode == 0, out.stderr
    metrics = json.loads((tmp_path / "run" / "eval" / "metrics.json").read_text())
    assert metrics["examples"] == 256 and 0.0 <= metrics["metrics"]["accuracy"] <= 1.0
    assert not (tmp_path / "run" / "vocab.json").exists()
