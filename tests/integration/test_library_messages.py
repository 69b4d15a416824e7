"""Clean messages from libraries (strategies/grpc_log.hpp): gRPC's own log
lines are dropped unless GRPC_VERBOSITY is set, so a port already in use
gives dtrain's one clear line, not ~1,500 characters of gRPC's nested error
first."""
import json
import socket

import pytest

from conftest import SOURCE_ROOT, run_dtrain
from test_cluster import clean_env


@pytest.mark.parametrize("verbosity", ["", "debug"])
def test_a_port_in_use_is_one_line_unless_grpc_verbosity_asks_for_more(verbosity, tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    port2 = other.getsockname()[1]
    other.close()
    tf_config = {"cluster": {"worker": [f"127.0.0.1:{port}", f"127.0.0.1:{port2}"]},
                 "task": {"type": "worker", "index": 0}}
    env = clean_env(TF_CONFIG=json.dumps(tf_config))
    env["GRPC_VERBOSITY"] = verbosity  # empty: unset for dtrain
    out = run_dtrain("train", SOURCE_ROOT / "sample_configs/mnist_mlp.yaml", "--model-dir", tmp_path / "run",
                     "--no-eval", "--set", "strategy.type=collective", "--set", "cluster.timeout_secs=5", env=env,
                     timeout=120)
    taken.close()
    assert out.returncode == 4, out.stderr[-3000:]
    line = (f"dtrain: the coordination service could not listen on 0.0.0.0:{port} (the address is in use or not an "
            "address of this host)")
    if verbosity:
        assert line in out.stderr
        assert "dtrain: grpc: " in out.stderr and "Address already in use" in out.stderr
    else:
        assert out.stderr.strip() == line, out.stderr[-3000:]
