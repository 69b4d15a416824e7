#!/usr/bin/env bash
# Installs what dtrain needs on Debian 12 (idempotent, non-interactive), builds
# it with Meson into build/, and (unless --no-train) trains the sample MLP job.
#   bash bootstrap.sh             # install, build, train sample_configs/mnist_mlp.yaml
#   bash bootstrap.sh --no-train  # install and build only
set -euo pipefail
cd "$(dirname "$0")"

train=1
for arg in "$@"; do
  case "$arg" in
    --no-train) train=0 ;;
    *) echo "usage: bash bootstrap.sh [--no-train]" >&2; exit 2 ;;
  esac
done

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Build dependencies, all from Debian's packages.
debs=(build-essential pkg-config meson ninja-build cmake python3 python3-pip python3-venv
      libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libfmt-dev doctest-dev
      libdnnl-dev libprotobuf-dev protobuf-compiler zlib1g-dev libpng-dev libjpeg62-turbo-dev
      libcurl4-openssl-dev libssl-dev libgrpc++-dev protobuf-compiler-grpc libgloo-dev libonnx-dev
      libsentencepiece-dev patchelf)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit is optional: when nvcc is present the CUDA parts are built.
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
# What `dtrain train` needs: the executable, its SentencePiece module and,
# where CUDA is built, its CUDA module. The tests and benchmarks are built by
# tests/run.sh.
targets=(cli/dtrain datasets/libdtrain_sentencepiece.so)
if ninja -C build -t targets all | grep -q '^engine/cuda/libdtrain_cuda.so:'; then
  targets+=(engine/cuda/libdtrain_cuda.so)
fi
ninja -C build "${targets[@]}"

if [ "$train" -eq 1 ]; then
  ./build/cli/dtrain train sample_configs/mnist_mlp.yaml --log-format plain
fi
