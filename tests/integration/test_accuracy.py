"""The sample jobs trained to the end on the built-in 10k sample reach the
target accuracy on the official MNIST t10k set (read from ../shared/data)."""
import pytest

from conftest import SHARED_MNIST, SOURCE_ROOT, need_shared_mnist, run_dtrain

# resnet_mnist: issue 13 measured 0.9907 with 3000 steps and set 0.990, one
# trajectory's result. Its t10k accuracy moves with the trajectory, which
# float32 summation order decides (networks with ReLU amplify it, README
# "Strategies"): run.seed 42 / 1 / 2 gave 0.9909 / 0.9883 / 0.9883 with
# AVX-512 kernels, seed 42 / 1 gave 0.9893 / 0.9889 with AVX2 kernels
# (DTRAIN_MAX_CPU_ISA=avx2). 0.987 is below every one of them.
TARGETS = {"mnist_mlp.yaml": 0.955, "mnist_cnn.yaml": 0.980, "resnet_mnist.yaml": 0.987}


@pytest.mark.parametrize("name,precision", [(n, "float32") for n in sorted(TARGETS)] + [("mnist_cnn.yaml", "bfloat16")])
def test_trained_sample_reaches_target_on_t10k(name, precision, tmp_path):
    need_shared_mnist()
    job = SOURCE_ROOT / "sample_configs" / name
    out = run_dtrain("train", job, "--model-dir", tmp_path, "--no-eval", "--log-format", "plain",
                     "--set", f"precision.compute={precision}", timeout=2400)
    assert out.returncode == 0, out.stderr
    out = run_dtrain("evaluate", job, "--model-dir", tmp_path,
                     "--set", f"data.eval.images={SHARED_MNIST / 't10k-images-idx3-ubyte.gz'}",
                     "--set", f"data.eval.labels={SHARED_MNIST / 't10k-labels-idx1-ubyte.gz'}",
                     "--set", "data.eval.skip=0")
    assert out.returncode == 0, out.stderr
    acc = float(next(l for l in out.stdout.splitlines() if l.startswith("accuracy:")).split()[1])
    print(f"{name} ({precision}): t10k accuracy {acc:.4f}")
    assert acc >= TARGETS[name]
