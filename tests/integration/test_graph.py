"""Model graphs through the real binary: `validate --graph`, a residual graph
with blocks trained and resumed, the graph's errors with exit code 2, and a
sequential checkpoint written before graphs existed resuming unchanged."""
import shutil

import numpy as np
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, run_dtrain

PRE_GRAPH = SOURCE_ROOT / "tests/integration/data/pre_graph_checkpoint"

RESIDUAL = """
model:
  input: {shape: [8, 8, 1]}
  blocks:
    res:
      params: {filters: required, stride: 1, project: false}
      layers:
        - {name: 0_conv, type: conv2d, filters: $filters, kernel: 1, strides: $stride, when: $project}
        - {name: 1_conv, type: conv2d, inputs: in, filters: $filters, kernel: 3, strides: $stride, padding: same, activation: relu}
        - {name: 2_conv, type: conv2d, filters: $filters, kernel: 3, padding: same}
        - {name: out, type: add, inputs: [0_conv, 2_conv], activation: relu}
  layers:
    - {name: stem, type: conv2d, filters: 4, kernel: 3, padding: same, activation: relu}
    - {name: stage1, block: res, repeat: 2, params: {filters: 4}}
    - {name: stage2, block: res, repeat: 2, params: {filters: 8}, first: {stride: 2, project: true}}
    - {type: flatten}
    - {name: logits, type: dense, units: 4}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
data:
  train: {format: synthetic, synthetic: {num_examples: 256, num_classes: 4, shape: [8, 8, 1]}, batch_size: 16, seed: 3}
  eval: {format: synthetic, synthetic: {num_examples: 64, num_classes: 4, shape: [8, 8, 1]}, batch_size: 16}
optimizer: {type: adam, learning_rate: 0.01}
run: {max_steps: 40, save_checkpoints_steps: 20, seed: 5}
eval: {steps: 2}
"""


def test_validate_graph_prints_every_layer_with_inputs_shapes_and_parameters(tmp_path):
    job = tmp_path / "res.yaml"
    job.write_text(RESIDUAL)
    out = run_dtrain("validate", "--graph", job)
    assert out.returncode == 0, out.stderr
    graph = out.stdout.split("\n\n")[0].splitlines()  # the memory plan follows a blank line
    lines = {l.split()[0]: l.split() for l in graph[1:-1]}
    assert lines["stage2_block1_0_conv"][1:] == ["conv2d", "[4,", "4,", "8]", "40", "stage1_block2_out/relu"]
    assert lines["stage2_block1_out"][-2:] == ["stage2_block1_0_conv,", "stage2_block1_2_conv"]
    assert "stage1_block1_0_conv" not in lines  # when: $project dropped it
    # By hand: stem 40 + stage1 2 * (148 + 148) + stage2 (40 + 296 + 584) + (584 + 584) + dense 128 * 4 + 4;
    # 20 layers with the adds' relu layers; 11 kernels and 11 biases.
    assert graph[-1] == "20 layers, 22 variables, 3236 parameters (3236 trainable)"


def test_a_residual_graph_trains_evaluates_and_resumes(tmp_path):
    job = tmp_path / "res.yaml"
    job.write_text(RESIDUAL)
    md = tmp_path / "run"
    out = run_dtrain("train", job, "--model-dir", md, "--set", "run.max_steps=20", "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    first = load_file(md / "model.ckpt-20.safetensors")
    assert first["stage2_block1_0_conv/kernel"].shape == (1, 1, 4, 8)
    out = run_dtrain("train", job, "--model-dir", md, "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    assert "resuming from" in out.stderr and "at step 20" in out.stderr
    # The uninterrupted run ends where the resumed one does.
    whole = tmp_path / "whole"
    out = run_dtrain("train", job, "--model-dir", whole, "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    a, b = load_file(md / "model.ckpt-40.safetensors"), load_file(whole / "model.ckpt-40.safetensors")
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_graph_errors_exit_2_with_every_problem_and_its_place(tmp_path):
    job = tmp_path / "bad.yaml"
    job.write_text(RESIDUAL.replace("inputs: [0_conv, 2_conv]", "inputs: [0_conv, 2_cnv]")
                   .replace("{type: flatten}", "{type: flatten, inputs: stage3}"))
    out = run_dtrain("validate", job)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f'dtrain: {job}:11:51: model.blocks.res.layers[3].inputs[1]: unknown layer "2_cnv"; a layer in block res '
        "reads `in`, a layer of the block above it, or a layer above the block's use (did you mean \"2_conv\"?)",
        f'{job}:16:31: model.layers[3].inputs: unknown layer "stage3" (did you mean "stage1"?)',
    ], out.stderr


def test_a_sequential_checkpoint_from_before_graphs_resumes(tmp_path):
    md = tmp_path / "model_dir"
    shutil.copytree(PRE_GRAPH / "model_dir", md)
    before = load_file(md / "model.ckpt-3.safetensors")
    out = run_dtrain("train", PRE_GRAPH / "job.yaml", "--model-dir", md, "--set", "run.max_steps=6",
                     "--no-eval", "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    assert "resuming from" in out.stderr and "at step 3" in out.stderr
    assert "differs" not in out.stderr  # same model_hash: the resolved model section is unchanged
    after = load_file(md / "model.ckpt-6.safetensors")
    assert sorted(after) == sorted(before)
    assert any(not np.array_equal(after[k], before[k]) for k in before)
