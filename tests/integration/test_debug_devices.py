"""debug:N devices wherever cpu:N works, through the real dtrain binary: every
strategy (one_device, towers, mirrored, collective across worker processes,
sync parameter_server) trains on debug devices to the same variables as
one_device on cpu:0, and checkpoints move between cpu and debug runs. Debug
memory faults on any host access outside its own kernels, so a missed
transfer anywhere in a step ends these runs with SIGSEGV."""
import pytest

from conftest import run_dtrain
from test_cluster import clean_env
from test_collective import mlp_collective_job, worst_relative_difference


def train(job, model_dir, *sets, launch=None):
    args = []
    for s in sets:
        args += ["--set", s]
    if launch:
        return run_dtrain("launch", *launch, job, "--model-dir", model_dir, "--no-eval", "--log-format", "plain",
                          *args, env=clean_env(), timeout=300)
    return run_dtrain("train", job, "--model-dir", model_dir, "--no-eval", "--log-format", "plain", *args,
                      env=clean_env())


@pytest.mark.parametrize("strategy,devices", [("one_device", "[debug:0]"), ("towers", "[debug:0,debug:1]"),
                                              ("mirrored", "[debug:0,debug:1,debug:2]")])
def test_single_process_strategies_on_debug_devices_equal_one_device_on_cpu(strategy, devices, tmp_path):
    job = mlp_collective_job(tmp_path, 24)
    ref = train(job, tmp_path / "cpu", "strategy.type=one_device")
    assert ref.returncode == 0, ref.stderr
    out = train(job, tmp_path / "debug", f"strategy.type={strategy}", f"strategy.devices={devices}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"strategy {strategy} on debug:0" in out.stderr
    diff = worst_relative_difference(tmp_path / "debug" / "model.ckpt-20.safetensors",
                                     tmp_path / "cpu" / "model.ckpt-20.safetensors")
    # one_device runs the very same kernels: bit for bit; replicas sum in another order.
    assert diff <= (0.0 if strategy == "one_device" else 1e-5), diff


def test_collective_workers_on_debug_devices_equal_one_device_on_cpu(tmp_path):
    job = mlp_collective_job(tmp_path, 16)
    ref = train(job, tmp_path / "cpu", "strategy.type=one_device", "data.train.batch_size=32")
    assert ref.returncode == 0, ref.stderr
    out = train(job, tmp_path / "multi", "strategy.devices=[debug:0]", launch=["--workers", "2"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "[worker 0] strategy collective on debug:0" in out.stderr
    diff = worst_relative_difference(tmp_path / "multi" / "model.ckpt-20.safetensors",
                                     tmp_path / "cpu" / "model.ckpt-20.safetensors")
    assert diff < 1e-5, diff


def test_sync_parameter_server_workers_on_debug_devices_equal_one_device_on_cpu(tmp_path):
    job = mlp_collective_job(tmp_path, 16)
    job.write_text(job.read_text().replace("strategy: {type: collective, communication: ring}",
                                           "strategy: {type: parameter_server, mode: sync}"))
    ref = train(job, tmp_path / "cpu", "strategy.type=one_device", "data.train.batch_size=32")
    assert ref.returncode == 0, ref.stderr
    out = train(job, tmp_path / "ps", "strategy.devices=[debug:0,debug:1]", launch=["--workers", "2", "--ps", "1"])
    assert out.returncode == 0, out.stderr[-3000:]
    diff = worst_relative_difference(tmp_path / "ps" / "model.ckpt-20.safetensors",
                                     tmp_path / "cpu" / "model.ckpt-20.safetensors")
    assert diff < 1e-5, diff


def test_checkpoints_move_between_cpu_and_debug_runs(tmp_path):
    job = mlp_collective_job(tmp_path, 24, max_steps=10, save_steps=10)
    straight = train(job, tmp_path / "straight", "strategy.type=one_device", "run.max_steps=20")
    assert straight.returncode == 0, straight.stderr
    # 10 steps on cpu, 10 resumed on debug:0, and the other way round.
    for first, second, name in [("cpu:0", "debug:0", "cpu-then-debug"), ("debug:0", "cpu:0", "debug-then-cpu")]:
        a = train(job, tmp_path / name, "strategy.type=one_device", f"strategy.devices=[{first}]")
        assert a.returncode == 0, a.stderr
        b = train(job, tmp_path / name, "strategy.type=one_device", f"strategy.devices=[{second}]",
                  "run.max_steps=20")
        assert b.returncode == 0, b.stderr
        assert "at step 10" in b.stderr
        diff = worst_relative_difference(tmp_path / name / "model.ckpt-20.safetensors",
                                         tmp_path / "straight" / "model.ckpt-20.safetensors")
        assert diff == 0.0, (name, diff)
