"""The sequence samples trained to the end reach their targets on held-out
data: transformer_sorted.yaml tells sorted from unsorted token sequences
(while a bag of embeddings on the same data stays at chance), and char_lm.yaml
predicts held-out license text well below its unigram entropy."""
import json
import re
import time

from conftest import SOURCE_ROOT, run_dtrain

SAMPLES = SOURCE_ROOT / "sample_configs"

# The bag-of-embeddings model for transformer_sorted's data: the mean of the
# token embeddings, then an MLP. It sees the tokens' counts and nothing of
# their order, and the counts carry nothing about the label.
BAG_MODEL = """model:
  input: {shape: [16], dtype: int32}
  layers:
    - {name: token_embedding, type: embedding, input_dim: 32, output_dim: 32}
    - {name: pool, type: global_avg_pool1d}
    - {name: hidden, type: dense, units: 64, activation: relu}
    - {name: predictions, type: dense, units: 2}
"""


def train_sample(job, model_dir):
    """Trains job to its max_steps with evaluation; returns (stderr, eval metrics.json, wall seconds)."""
    start = time.monotonic()
    out = run_dtrain("train", job, "--model-dir", model_dir, "--log-format", "plain", timeout=1800)
    wall = time.monotonic() - start
    assert out.returncode == 0, out.stderr
    metrics = json.loads((model_dir / "eval" / "metrics.json").read_text())
    return out.stderr, metrics, wall


def test_transformer_tells_sorted_sequences_and_a_bag_of_embeddings_cannot(tmp_path):
    # Eval reads seed 1, training seed 0: other examples. Two examples of 16
    # ids out of 32 coincide with probability at most 16!/32^16 = 1.7e-11, so
    # the 64,000 examples trained on and the 4,000 evaluated share none
    # (expected number below 0.005).
    job = SAMPLES / "transformer_sorted.yaml"
    _, metrics, wall = train_sample(job, tmp_path / "transformer")
    acc = metrics["metrics"]["accuracy"]
    print(f"transformer_sorted: eval accuracy {acc:.4f} on {metrics['examples']} examples "
          f"at step {metrics['global_step']}, {wall:.0f} s")
    assert metrics["examples"] == 4000 and metrics["global_step"] == 1000
    assert acc >= 0.99  # issue 13's target (measured 1.0000)

    # The same job, data and steps with the bag model in place of the transformer.
    text = job.read_text()
    bag = tmp_path / "bag_sorted.yaml"
    bag.write_text(text[:text.index("model:\n")] + BAG_MODEL + text[text.index("  loss:"):])
    _, metrics, wall = train_sample(bag, tmp_path / "bag")
    acc = metrics["metrics"]["accuracy"]
    print(f"bag of embeddings: eval accuracy {acc:.4f}, {wall:.0f} s")
    assert metrics["examples"] == 4000
    assert acc <= 0.60  # at chance, 0.5 (one standard deviation over 4,000 examples: 0.008)


def test_char_lm_predicts_held_out_text_well_below_the_unigram_entropy(tmp_path):
    stderr, metrics, wall = train_sample(SAMPLES / "char_lm.yaml", tmp_path / "run")
    entropy = float(re.search(r"; unigram entropy ([0-9.]+) nats/token over \d+ symbols$", stderr, re.M).group(1))
    loss = metrics["metrics"]["loss"]
    print(f"char_lm: held-out eval loss {loss:.4f} nats/token, unigram entropy {entropy:.4f} "
          f"(ratio {loss / entropy:.3f}), step {metrics['global_step']}, {wall:.0f} s")
    assert metrics["global_step"] == 2000
    assert f"eval at step 2000:  loss {loss:.4f}" in stderr
    assert loss <= 0.6 * entropy  # issue 13's target (measured 1.2033 against 3.1657: 0.380)
