"""No exception reaches std::terminate: a throw injected (DTRAIN_TEST_THROW,
engine/thread_errors.hpp) on a replica thread, the input thread, the
all-reduce thread or the caller's own thread ends the run with one located
line and exit code 1, and the checkpoint written before stays whole."""
import pytest
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, run_dtrain
from test_cluster import clean_env

MLP = SOURCE_ROOT / "sample_configs/mnist_mlp.yaml"
MIRRORED = ["--set", "strategy.type=mirrored", "--set", "strategy.devices=[cpu:0,cpu:1]"]


def train(model_dir, steps, *args, throw=None):
    env = clean_env(DTRAIN_TEST_THROW=throw or "")
    return run_dtrain("train", MLP, "--model-dir", model_dir, "--no-eval", "--log-format", "plain",
                      "--set", f"run.max_steps={steps}", *args, env=env, timeout=300)


@pytest.mark.parametrize("strategy,throw,line", [
    ("mirrored", "replica", "dtrain: injected failure at replica (DTRAIN_TEST_THROW)"),
    ("mirrored", "replica:std", "dtrain: replica {r}: injected at replica (DTRAIN_TEST_THROW)"),
    ("mirrored", "replica:unknown", "dtrain: replica {r}: an exception of unknown type"),
    ("one_device", "input:std", "dtrain: input pipeline: injected at input (DTRAIN_TEST_THROW)"),
    ("one_device", "input", "dtrain: injected failure at input (DTRAIN_TEST_THROW)"),
    ("mirrored", "input:unknown", "dtrain: input pipeline: an exception of unknown type"),
])
def test_a_throw_on_a_thread_ends_the_run_with_its_place_and_keeps_the_checkpoint(strategy, throw, line, tmp_path):
    md = tmp_path / "run"
    args = MIRRORED if strategy == "mirrored" else ["--set", "strategy.type=one_device"]
    first = train(md, 5, *args)
    assert first.returncode == 0, first.stderr
    before = load_file(str(md / "model.ckpt-5.safetensors"))
    out = train(md, 10, *args, throw=throw)
    assert out.returncode == 1, out.stderr[-3000:]
    assert "terminate called" not in out.stderr
    last = out.stderr.splitlines()[-1]
    # Which replica fails first is a race: any of them names itself.
    assert last in {line.format(r=r) for r in (0, 1)}, last
    after = load_file(str(md / "model.ckpt-5.safetensors"))
    assert sorted(after) == sorted(before) and all((after[k] == before[k]).all() for k in before)
    assert sorted(p.name for p in md.glob("model.ckpt-*")) == ["model.ckpt-5.safetensors"]


def test_a_throw_on_the_all_reduce_thread_stops_the_cluster(tmp_path):
    out = run_dtrain("launch", "--workers", 2, MLP, "--model-dir", tmp_path / "multi", "--no-eval",
                     "--log-format", "plain", "--set", "strategy.type=collective", "--set", "run.max_steps=5",
                     "--set", "cluster.timeout_secs=20",
                     env=clean_env(DTRAIN_TEST_THROW="all_reduce:std", OMP_NUM_THREADS="1"), timeout=300)
    assert out.returncode != 0
    assert "terminate called" not in out.stderr
    assert ("dtrain: all-reduce across workers: injected at all_reduce (DTRAIN_TEST_THROW)"
            in out.stderr), out.stderr[-3000:]


def test_a_throw_on_a_record_reading_thread_ends_the_run_with_its_place(tmp_path):
    """A streamed TFRecord input reads each open file on its own thread (ReadAheadReader)."""
    from jpeg_shards import write_shards
    from test_streaming import job
    shards = tmp_path / "shards"
    shards.mkdir()
    write_shards(shards, 2, 32, 16, distinct=16)
    path, model_dir = job(tmp_path, "stream", shards, 16, 8, 4, 4, "stream: true")
    out = run_dtrain("train", path, "--log-format", "plain", env=clean_env(DTRAIN_TEST_THROW="read_ahead:std"),
                     timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    assert "terminate called" not in out.stderr
    assert out.stderr.splitlines()[-1].endswith(
        "input pipeline: reading records: injected at read_ahead (DTRAIN_TEST_THROW)"), out.stderr[-2000:]
    assert not list(model_dir.glob("model.ckpt-*"))


@pytest.mark.parametrize("job,args", [
    (MLP, MIRRORED),  # replica 0 waits for replica 1's buckets in the all-reduce
    # replica 0 waits for replica 1 in batch_norm's sum over the replicas (forward)
    (SOURCE_ROOT / "sample_configs/resnet20_synthetic.yaml",
     ["--set", "strategy.type=towers", "--set", "strategy.devices=[cpu:0,cpu:1]"]),
])
def test_a_throw_on_one_replica_releases_the_others_and_ends_the_run(job, args, tmp_path):
    """Only replica 1 fails (DTRAIN_TEST_THROW=replica1): the replicas that
    wait for it in the step are released, and the run ends with replica 1's
    error, not a hang and not a secondary error."""
    out = run_dtrain("train", job, "--model-dir", tmp_path / "run", "--no-eval", "--log-format", "plain",
                     "--set", "run.max_steps=3", *args, env=clean_env(DTRAIN_TEST_THROW="replica1:std"), timeout=120)
    assert out.returncode == 1, out.stderr[-3000:]
    assert "terminate called" not in out.stderr
    assert out.stderr.splitlines()[-1] == "dtrain: replica 1: injected at replica1 (DTRAIN_TEST_THROW)", \
        out.stderr[-2000:]


@pytest.mark.parametrize("boundary,ps", [
    ("coordination service register", 0),  # a gRPC handler of the chief's coordination service
    ("coordination heartbeat", 0),  # every task's heartbeat thread
    ("coordination service monitor", 0),  # the service's monitor thread
    ("parameter service push", 1),  # a gRPC handler of a ps task
])
def test_a_throw_in_the_cluster_runtime_ends_the_cluster_with_its_place(boundary, ps, tmp_path):
    """A throw in a gRPC handler or a cluster thread reaches the tasks as a
    located error (not gRPC's "Unexpected error in RPC handling", not
    std::terminate) and every task exits with the cluster code."""
    args = ["--set", "strategy.type=parameter_server", "--set", "strategy.mode=sync"] if ps else \
        ["--set", "strategy.type=collective"]
    out = run_dtrain("launch", "--workers", 2, "--ps", ps, MLP, "--model-dir", tmp_path / "run", "--no-eval",
                     "--log-format", "plain", "--set", "run.max_steps=100000", "--set", "cluster.timeout_secs=5",
                     *args, env=clean_env(DTRAIN_TEST_THROW=f"{boundary}:std", OMP_NUM_THREADS="1"), timeout=300)
    assert out.returncode == 4, out.stderr[-3000:]
    assert "terminate called" not in out.stderr and "Unexpected error in RPC handling" not in out.stderr
    assert f"{boundary}: injected at {boundary} (DTRAIN_TEST_THROW)" in out.stderr, out.stderr[-3000:]
    for ckpt in (tmp_path / "run").glob("model.ckpt-*"):  # a fast machine may save one: whole
        assert load_file(str(ckpt))
