"""format: text_folder with the real binary (issue 27, part 3): three class
folders of .txt files written here (sentences of class words among shared
words, mixed case and punctuation) train an embedding (input_dim: auto, the
size of the vocabulary built from the training split) -> global_avg_pool1d
-> dense model well above the majority baseline on a held-out split; the
vocabulary is saved as model_dir/token_vocab.json (<pad>, <unk>, tokens by
count) and evaluate and predict use it even when the folder has changed;
predict on a folder of new .txt files names each file's class; a first run
that fails after writing the vocabulary does not bind the next; invalid
UTF-8 is a data error naming the file; a missing max_length is refused."""
import json
import re

import numpy as np

from conftest import run_dtrain

CLASSES = ["cooking", "sports", "tech"]
SHARED = ("the a and of to in is it that was for on with as at by this from but not or have had are were one "
          "all so we they he she you there their what about when would more some out up if like just").split()
TOPIC = {
    "cooking": "bake oven flour sugar butter recipe simmer garlic onion salt pepper dough roast stir sauce "
               "kitchen spoon pan boil knead".split(),
    "sports": "goal match team coach score league referee player season stadium ball pitch win defeat striker "
              "tournament fans sprint race medal".split(),
    "tech": "server code compile software laptop network database kernel cloud python bug deploy chip memory "
            "browser api cache algorithm debug linux".split(),
}

JOB = """
model:
  input: {{shape: [{length}], dtype: int32}}
  layers:
    - {{type: embedding, input_dim: auto, output_dim: 16}}
    - {{type: global_avg_pool1d}}
    - {{type: dense, units: {classes}}}
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.02}}
data:
  train: {{format: text_folder, dir: {d}, tokenizer: {tok}, max_length: {length}, holdout: 0.25, split: train,
          batch_size: 32, shuffle: 256{extra}}}
  eval: {{format: text_folder, dir: {d}, tokenizer: {tok}, max_length: {length}, holdout: 0.25, split: holdout,
         batch_size: 64{extra}}}
run: {{model_dir: {m}, max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 1000, seed: 5}}
"""


def sentence(rng, k):
    """About 8..40 words: 15% of them from class k's topic, 5% from another topic, the rest shared."""
    words = []
    for _ in range(int(rng.integers(8, 41))):
        u = rng.random()
        if u < 0.15:
            words.append(str(rng.choice(TOPIC[CLASSES[k]])))
        elif u < 0.2:
            words.append(str(rng.choice(TOPIC[CLASSES[(k + 1) % 3]])))
        else:
            words.append(str(rng.choice(SHARED)))
    text = " ".join(w.upper() if rng.random() < 0.1 else w for w in words)
    return text[0].upper() + text[1:] + rng.choice([".", "!", "?", "..."])


def make_folder(d, per_class=60, seed=0):
    rng = np.random.default_rng(seed)
    for k, name in enumerate(CLASSES):
        (d / name).mkdir(parents=True)
        for i in range(per_class):
            (d / name / f"{i:03d}.txt").write_text(sentence(rng, k) + "\n" + sentence(rng, k) + "\n", encoding="utf-8")
    (d / "tech" / "README.md").write_text("not read: not a .txt file")


def job_file(tmp_path, d, m, steps=150, tok="word", length=48, classes="auto", extra="", name="job.yaml"):
    job = tmp_path / name
    job.write_text(JOB.format(d=d, m=m, steps=steps, tok=tok, length=length, classes=classes, extra=extra))
    return job


def test_word_tokens_beat_the_majority_baseline_and_the_saved_vocabulary_is_reused(tmp_path):
    d, m = tmp_path / "texts", tmp_path / "m"
    make_folder(d)
    job = job_file(tmp_path, d, m)
    r = run_dtrain("train", job, "--log-format", "plain")
    assert r.returncode == 0, r.stderr[-3000:]
    vocab = json.loads((m / "token_vocab.json").read_text(encoding="utf-8"))
    assert vocab["tokenizer"] == "word" and vocab["tokens"][:2] == ["<pad>", "<unk>"]
    size = vocab["size"]
    assert size == len(vocab["tokens"]) and size <= len(SHARED) + 3 * 20 + 2
    tokens = vocab["tokens"][2:]
    assert all(t == t.lower() and re.fullmatch(r"[a-z']+", t) for t in tokens), tokens
    assert f"model: embedding input_dim: auto = {size} (the vocabulary of data.train's training split)" in r.stderr
    assert "model: dense units: auto = 3 (the class folders of data.train)" in r.stderr
    assert f"wrote the vocabulary of data.train to {m}/token_vocab.json: {size} ids" in r.stderr
    # floor(0.25 x 60) = 15 of each class held out.
    assert (f"data.train: text_folder {d}: 135 files (train split) in 3 classes: 0 cooking (45), 1 sports (45), "
            f"2 tech (45); ") in r.stderr, r.stderr
    metrics = json.loads((m / "eval" / "metrics-150.json").read_text())
    acc = metrics["metrics"]["accuracy"]
    print(f"text_folder (word): eval accuracy {acc:.4f} on {metrics['examples']} held-out files "
          f"(majority baseline 0.3333), loss {metrics['metrics']['loss']:.4f}, vocabulary {size} ids")
    assert metrics["examples"] == 45
    assert acc >= 0.8, metrics
    assert metrics["report"]["outputs"][0]["classes"] == CLASSES

    # New words in the folder after training: evaluate still reads the saved
    # vocabulary (a rebuilt one would change input_dim and not fit the checkpoint).
    (d / "cooking" / "zzz_new.txt").write_text("Completely novel vocabulary: xylophone quasar zeppelin.")
    ev = run_dtrain("evaluate", job)
    assert ev.returncode == 0, ev.stderr
    assert f"model: embedding input_dim: auto = {size} (the vocabulary of {m}/token_vocab.json)" in ev.stderr
    assert json.loads((m / "token_vocab.json").read_text(encoding="utf-8")) == vocab

    # predict on a folder of new .txt files: one row per file, in path order.
    new = tmp_path / "new"
    new.mkdir()
    rng = np.random.default_rng(11)
    truth = {}
    for i in range(30):
        f = new / f"doc{i:02d}.txt"
        f.write_text(sentence(rng, i % 3) + " " + sentence(rng, i % 3), encoding="utf-8")
        truth[str(f)] = CLASSES[i % 3]
    r = run_dtrain("predict", job, "--input", new, "--output", tmp_path / "p.csv")
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "file,class,class_name,pcooking,psports,ptech"
    rows = [l.split(",") for l in lines[1:]]
    assert [row[0] for row in rows] == sorted(truth)
    right = sum(row[2] == truth[row[0]] for row in rows)
    print(f"text_folder: predict on 30 new files: {right}/30 right")
    assert right >= 24
    # One file gives the same probabilities as in the folder.
    r = run_dtrain("predict", job, "--input", new / "doc04.txt", "--output", tmp_path / "one.csv")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "one.csv").read_text().splitlines()[1].split(",")[1:] == rows[4][1:]


def test_char_tokens_and_a_failed_first_run_does_not_bind_the_next(tmp_path):
    d, m = tmp_path / "texts", tmp_path / "m"
    make_folder(d, per_class=12)
    # A first run that fails after writing the vocabulary (3 classes, 2 units).
    bad = job_file(tmp_path, d, m, steps=4, tok="char", length=64, classes=2, name="bad.yaml")
    r = run_dtrain("train", bad, "--no-eval")
    assert r.returncode == 3, r.stderr
    assert "label" in r.stderr, r.stderr
    assert (m / "token_vocab.json").exists() and not list(m.glob("model.ckpt-*"))
    # The corrected job (two classes, word tokens): a new vocabulary, no error.
    good = job_file(tmp_path, d, m, steps=4, extra=", classes: [cooking, tech]")
    r = run_dtrain("train", good, "--no-eval")
    assert r.returncode == 0, r.stderr
    vocab = json.loads((m / "token_vocab.json").read_text(encoding="utf-8"))
    assert vocab["tokenizer"] == "word"
    assert f"model: embedding input_dim: auto = {vocab['size']} (the vocabulary of data.train's training split)" in r.stderr
    assert "model: dense units: auto = 2 (the class folders of data.train)" in r.stderr
    # Resuming with another tokenizer is refused: the ids would change.
    r = run_dtrain("train", good, "--no-eval", "--set", "data.train.tokenizer=char", "--set", "run.max_steps=8")
    assert r.returncode == 2, r.stderr
    assert (f"data.train: tokenizer char does not match the vocabulary saved with the model ({m}/token_vocab.json, "
            "tokenizer word), so token ids would change") in r.stderr


def test_bad_text_and_a_missing_max_length_are_clear_errors(tmp_path):
    d, m = tmp_path / "texts", tmp_path / "m"
    make_folder(d, per_class=4)
    (d / "sports" / "latin1.txt").write_bytes("caf\xe9 ole".encode("latin-1"))
    job = job_file(tmp_path, d, m, steps=2)
    r = run_dtrain("train", job, "--no-eval")
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().endswith(
        f"{d}/sports/latin1.txt: invalid UTF-8 at byte offset 3: byte 0xe9 is not followed by a continuation byte; "
        "text_folder reads UTF-8 text files") or f"{d}/sports/latin1.txt: invalid UTF-8 at byte offset 3" in r.stderr, \
        r.stderr
    assert not (m / "token_vocab.json").exists()
    (d / "sports" / "latin1.txt").unlink()
    job.write_text(job.read_text().replace(", max_length: 48", "", 1))
    r = run_dtrain("validate", job)
    assert r.returncode == 2, r.stderr
    assert "max_length" in r.stderr, r.stderr


def test_sentencepiece_tokens_from_a_model_trained_by_dtrain_data_sentencepiece(tmp_path):
    d, m = tmp_path / "texts", tmp_path / "m"
    make_folder(d)
    sp = tmp_path / "sp" / "text.model"
    sp.parent.mkdir()
    # The model is trained on the training split only (holdout as the job's).
    r = run_dtrain("data", "sentencepiece", "--dir", d, "--holdout", "0.25", "--vocab-size", "300", "--out", sp)
    assert r.returncode == 0, r.stderr
    assert f"lines of 135 .txt files of {d} (3 classes, holdout 0.25 left out)" in r.stdout, r.stdout
    assert f"wrote {sp}" in r.stdout and "tokenizer: sentencepiece" in r.stdout
    pieces = int(re.search(r"SentencePiece model of (\d+) pieces", r.stdout).group(1))
    assert 50 < pieces <= 300, r.stdout

    job = job_file(tmp_path, d, m, tok="sentencepiece", length=96, extra=f", sentencepiece_model: {sp}")
    r = run_dtrain("train", job, "--log-format", "plain")
    assert r.returncode == 0, r.stderr[-3000:]
    vocab = json.loads((m / "token_vocab.json").read_text(encoding="utf-8"))
    assert vocab["tokenizer"] == "sentencepiece" and vocab["sentencepiece_model"] == "sentencepiece.model"
    # <pad>, <unk>, then the model's pieces but <unk>, <s> and </s>.
    assert vocab["tokens"][:2] == ["<pad>", "<unk>"] and vocab["size"] == pieces - 3 + 2
    assert "<s>" not in vocab["tokens"] and "</s>" not in vocab["tokens"]
    assert sum(t.startswith("\u2581") for t in vocab["tokens"]) > 10  # word-initial pieces
    assert (m / "sentencepiece.model").read_bytes() == sp.read_bytes()
    assert f"model: embedding input_dim: auto = {vocab['size']} (the vocabulary of data.train's training split)" in r.stderr
    assert "sentencepiece tokens" in r.stderr
    metrics = json.loads((m / "eval" / "metrics-150.json").read_text())
    acc = metrics["metrics"]["accuracy"]
    print(f"text_folder (sentencepiece, {pieces} pieces): eval accuracy {acc:.4f} on {metrics['examples']} held-out "
          f"files (majority baseline 0.3333), loss {metrics['metrics']['loss']:.4f}")
    assert metrics["examples"] == 45
    assert acc >= 0.8, metrics

    # predict needs only the model_dir: the job's .model file may be gone.
    sp.rename(tmp_path / "moved.model")
    new = tmp_path / "new"
    new.mkdir()
    rng = np.random.default_rng(12)
    truth = {}
    for i in range(30):
        f = new / f"doc{i:02d}.txt"
        f.write_text(sentence(rng, i % 3) + " " + sentence(rng, i % 3), encoding="utf-8")
        truth[str(f)] = CLASSES[i % 3]
    r = run_dtrain("predict", job, "--input", new, "--output", tmp_path / "p.csv")
    assert r.returncode == 0, r.stderr
    rows = [l.split(",") for l in (tmp_path / "p.csv").read_text().splitlines()[1:]]
    right = sum(row[2] == truth[row[0]] for row in rows)
    print(f"text_folder (sentencepiece): predict on 30 new files: {right}/30 right")
    assert right >= 24

    # Export: the class names, the vocabulary and the model beside the graph.
    r = run_dtrain("export", job, "--format", "onnx", "--out", tmp_path / "out" / "text.onnx")
    assert r.returncode == 0, r.stderr
    beside = json.loads((tmp_path / "out" / "text.preprocessing.json").read_text(encoding="utf-8"))
    assert beside["classes"] == CLASSES and beside["max_length"] == 96
    assert beside["token_vocabulary"]["tokens"] == vocab["tokens"]
    assert beside["token_vocabulary"]["sentencepiece_model"] == "text.sentencepiece.model"
    assert (tmp_path / "out" / "text.sentencepiece.model").read_bytes() == (m / "sentencepiece.model").read_bytes()

    # Another model at the job's path: refused, the ids would change.
    r = run_dtrain("data", "sentencepiece", "--dir", d, "--vocab-size", "120", "--out", sp)
    assert r.returncode == 0, r.stderr
    r = run_dtrain("evaluate", job)
    assert r.returncode == 2, r.stderr
    assert (f"sentencepiece_model {sp} is not the model saved with the checkpoint ({m}/sentencepiece.model), so token "
            "ids would change") in r.stderr, r.stderr


def test_sentencepiece_errors(tmp_path):
    d, m = tmp_path / "texts", tmp_path / "m"
    make_folder(d, per_class=4)
    job = job_file(tmp_path, d, m, steps=2, tok="sentencepiece")
    r = run_dtrain("train", job, "--no-eval")
    assert r.returncode == 2, r.stderr
    assert "data.train: tokenizer sentencepiece needs sentencepiece_model (a .model file; train one with " \
           "`dtrain data sentencepiece --dir DIR --vocab-size N --out m.model`)" in r.stderr, r.stderr
    not_model = tmp_path / "not.model"
    not_model.write_text("hello")
    job = job_file(tmp_path, d, m, steps=2, tok="sentencepiece", extra=f", sentencepiece_model: {not_model}")
    r = run_dtrain("train", job, "--no-eval")
    assert r.returncode == 3, r.stderr
    assert f"data.train: sentencepiece_model: {not_model}: not a SentencePiece model" in r.stderr, r.stderr
    job = job_file(tmp_path, d, m, steps=2, tok="sentencepiece", extra=f", sentencepiece_model: {not_model}, max_tokens: 50")
    r = run_dtrain("train", job, "--no-eval")
    assert r.returncode == 2, r.stderr
    assert "max_tokens and min_count do not apply to tokenizer sentencepiece" in r.stderr, r.stderr
    job = job_file(tmp_path, d, m, steps=2, tok="word", extra=f", sentencepiece_model: {not_model}")
    r = run_dtrain("train", job, "--no-eval")
    assert r.returncode == 2, r.stderr
    assert "sentencepiece_model applies to tokenizer sentencepiece, not word" in r.stderr, r.stderr
    # The training command: a vocab size the text cannot fill with --exact-vocab-size, an empty file, bad UTF-8.
    r = run_dtrain("data", "sentencepiece", d / "sports" / "000.txt", "--vocab-size", "5000", "--exact-vocab-size",
                   "--out", tmp_path / "x.model")
    assert r.returncode == 3 and "Vocabulary size too high (5000)" in r.stderr, r.stderr
    assert not (tmp_path / "x.model").exists()
    (tmp_path / "empty.txt").write_text("\n\n")
    r = run_dtrain("data", "sentencepiece", tmp_path / "empty.txt", "--out", tmp_path / "x.model")
    assert r.returncode == 3 and f"{tmp_path}/empty.txt: no text (every line is empty)" in r.stderr, r.stderr
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 ole".encode("latin-1"))
    r = run_dtrain("data", "sentencepiece", tmp_path / "latin1.txt", "--out", tmp_path / "x.model")
    assert r.returncode == 3 and f"{tmp_path}/latin1.txt: invalid UTF-8 at byte offset 3" in r.stderr, r.stderr
    r = run_dtrain("data", "sentencepiece", "--out", tmp_path / "x.model")
    assert r.returncode == 2 and "give text files or --dir" in r.stderr, r.stderr


def test_stream_true_reads_the_files_as_training_goes_with_the_same_result(tmp_path):
    d = tmp_path / "texts"
    make_folder(d, per_class=30)
    results = {}
    for stream in ("true", "false"):
        m = tmp_path / f"m-{stream}"
        job = job_file(tmp_path, d, m, steps=40, extra=f", stream: {stream}", name=f"{stream}.yaml")
        r = run_dtrain("train", job, "--log-format", "plain")
        assert r.returncode == 0, r.stderr[-3000:]
        if stream == "true":
            assert re.search(r"data\.train: \d+ text_folder files, [0-9.]+ MiB: files read and tokenized as training "
                             r"goes \(stream: true\)", r.stderr), r.stderr
            assert "read and tokenized (word) as training goes" in r.stderr
        results[stream] = json.loads((m / "eval" / "metrics-40.json").read_text())["metrics"]
    assert results["true"] == results["false"]

    # A file that is not UTF-8, read only when its batch is: the error names it.
    other = tmp_path / "other"
    make_folder(other, per_class=3, seed=4)
    (other / "sports" / "latin1.txt").write_bytes("caf\xe9 ole".encode("latin-1"))
    job = job_file(tmp_path, d, tmp_path / "m-true", steps=40, extra=", stream: true", name="true.yaml")
    text = job.read_text().replace(f"eval: {{format: text_folder, dir: {d}", f"eval: {{format: text_folder, dir: {other}")
    job.write_text(text.replace(" holdout: 0.25, split: holdout,", ""))  # every file of `other`
    r = run_dtrain("evaluate", job)
    assert r.returncode == 3, r.stderr
    assert f"{other}/sports/latin1.txt: invalid UTF-8 at byte offset 3" in r.stderr, r.stderr
