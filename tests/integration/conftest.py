"""Shared fixtures for the process-level tests: the real dtrain binary, the
source root, and small job files written into a temporary directory."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE_ROOT = Path(os.environ.get("DTRAIN_SOURCE_ROOT", Path(__file__).resolve().parents[2]))
# ../shared (CI has it beside the clone; a user's clone does not), or DTRAIN_SHARED_DIR.
SHARED_DIR = Path(os.environ.get("DTRAIN_SHARED_DIR") or SOURCE_ROOT.parent / "shared")
SHARED_MNIST = SHARED_DIR / "data" / "mnist"


def need_shared_mnist():
    """Skips the calling test, saying why, where the official MNIST files are absent."""
    if not (SHARED_MNIST / "t10k-labels-idx1-ubyte.gz").exists():
        pytest.skip(f"{SHARED_MNIST} is absent (a user's clone); CI has it")
SAMPLE_IMAGES = SOURCE_ROOT / "sample_configs/data/mnist-sample-train-images-idx3-ubyte.gz"
SAMPLE_LABELS = SOURCE_ROOT / "sample_configs/data/mnist-sample-train-labels-idx1-ubyte.gz"


def dtrain_bin():
    path = os.environ.get("DTRAIN_BIN", str(SOURCE_ROOT / "build/cli/dtrain"))
    if not Path(path).exists():
        pytest.skip(f"dtrain binary not built at {path}")
    return path


def run_dtrain(*args, cwd=None, timeout=900, env=None):
    """Runs dtrain and returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([dtrain_bin(), *map(str, args)], cwd=cwd or SOURCE_ROOT, capture_output=True,
                          text=True, timeout=timeout, env=full_env)


MLP_JOB = """
model:
  input: {{shape: [28, 28, 1]}}
  layers:
    - {{type: flatten}}
    - {{type: dense, units: 32, activation: relu}}
    - {{type: dropout, rate: 0.1}}
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy, mean_loss]
optimizer: {{type: sgd, learning_rate: 0.1, momentum: 0.9}}
data:
  train: {{format: idx, images: {images}, labels: {labels}, take: 2000, batch_size: 32, shuffle: 500,
           scale: 0.00392156862745098}}
  eval: {{format: idx, images: {images}, labels: {labels}, skip: 9000, batch_size: 250,
          scale: 0.00392156862745098}}
run:
  model_dir: {model_dir}
  max_steps: {max_steps}
  save_checkpoints_steps: {save_steps}
  keep_checkpoint_max: {keep}
  save_summary_steps: 10
  log_step_count_steps: 10
  seed: 7
  deterministic: true
eval: {{throttle_secs: 0}}
"""


CNN_LAYERS = """
    - {type: conv2d, filters: 8, kernel: 3, padding: same, activation: relu}
    - {type: max_pool2d, size: 2}
    - {type: flatten}
    - {type: dense, units: 10}
"""


def cnn_job_text(mlp_text):
    """The MLP job with a small CNN in place of its layers."""
    head, rest = mlp_text.split("  layers:\n", 1)
    return head + "  layers:" + CNN_LAYERS + rest[rest.index("  loss:"):]


@pytest.fixture
def cnn_job(tmp_path):
    """Like mlp_job, with a small CNN."""
    def make(max_steps=60, save_steps=20, keep=5, name="cnn.yaml"):
        model_dir = tmp_path / "cnn_run"
        job = tmp_path / name
        job.write_text(cnn_job_text(MLP_JOB.format(images=SAMPLE_IMAGES, labels=SAMPLE_LABELS, model_dir=model_dir,
                                                   max_steps=max_steps, save_steps=save_steps, keep=keep)))
        return job, model_dir
    return make


@pytest.fixture
def mlp_job(tmp_path):
    """Writes a small MLP job on the built-in sample; returns (job path, model_dir)."""
    def make(max_steps=60, save_steps=20, keep=5, name="job.yaml"):
        model_dir = tmp_path / "run"
        job = tmp_path / name
        job.write_text(MLP_JOB.format(images=SAMPLE_IMAGES, labels=SAMPLE_LABELS, model_dir=model_dir,
                                      max_steps=max_steps, save_steps=save_steps, keep=keep))
        return job, model_dir
    return make


# Linux keeps a process's peak RSS across fork and exec: ru_maxrss of a child
# forked straight from pytest starts at pytest's own peak (hundreds of MiB once
# onnxruntime is imported). This small interpreter forks the command from its
# own fresh (about 10 MiB) image, waits for it and writes the command's own
# peak RSS in KiB to the file given first; it exits with the command's code.
# NAME=VALUE arguments before "--" are set in the command's environment only.
_PEAK_RSS_WRAPPER = """
import os, sys
report, rest = sys.argv[1], sys.argv[2:]
split = rest.index("--")
child_env, cmd = rest[:split], rest[split + 1:]
pid = os.fork()
if pid == 0:
    try:
        for kv in child_env:
            name, _, value = kv.partition("=")
            os.environ[name] = value
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def peak_rss_command(cmd, report, child_env=None):
    """cmd wrapped so that its own peak RSS (KiB) is written to `report`
    (read it with read_peak_rss_kib once the process has exited); child_env
    is set for cmd alone (LD_DEBUG, which would trace the wrapper too)."""
    env_args = [f"{k}={v}" for k, v in (child_env or {}).items()]
    return [sys.executable, "-c", _PEAK_RSS_WRAPPER, str(report), *env_args, "--", *map(str, cmd)]


def read_peak_rss_kib(report):
    return int(Path(report).read_text())
