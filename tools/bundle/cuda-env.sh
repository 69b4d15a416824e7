# Sourced by the bundle's launcher (dtrain) and run-gpu-checks.sh: finds the
# CUDA 13 runtime libraries the CUDA module needs and puts their folders on
# LD_LIBRARY_PATH. Sets DTRAIN_CUDA_LIBS_FROM to where they came from (or why none).
# Where it looks, first match wins:
#   1. DTRAIN_CUDA_LIBS: folders (":"-separated) named by the user;
#   2. the nvidia-* Python wheels PyTorch installs (site-packages/nvidia/*/lib),
#      through $DTRAIN_PYTHON or python3;
#   3. the system's loader (ldconfig: a CUDA toolkit or Debian/Ubuntu packages).
# The NVIDIA driver's libcuda.so.1 always comes from the system.

# The CUDA libraries the bundle's ELF files need, one a line, as make_bundle.py found them.
dtrain_cuda_sonames="$(cat "$(dirname "${BASH_SOURCE[0]}")/share/cuda-libraries.txt" 2>/dev/null)"

# Prints the sonames of $dtrain_cuda_sonames that none of the folders in $1
# (":"-separated) holds.
dtrain_cuda_missing() {
  local so d found missing="" folders
  IFS=: read -r -a folders <<<"$1"
  for so in $dtrain_cuda_sonames; do
    found=""
    for d in "${folders[@]}"; do [ -e "$d/$so" ] && found=1 && break; done
    [ -n "$found" ] || missing="$missing $so"
  done
  printf '%s' "${missing# }"
}

dtrain_cuda_env() {
  local dirs="" py
  if [ -n "${DTRAIN_CUDA_LIBS:-}" ]; then
    dirs="$DTRAIN_CUDA_LIBS"
    DTRAIN_CUDA_LIBS_FROM="DTRAIN_CUDA_LIBS"
  else
    py="${DTRAIN_PYTHON:-$(command -v python3 || true)}"
    if [ -n "$py" ]; then
      # nvidia is a namespace package: every wheel adds nvidia/<name>/lib
      # (CUDA 13's runtime, cuBLAS: nvidia/cu13/lib; cuDNN: nvidia/cudnn/lib; NCCL: nvidia/nccl/lib).
      dirs="$("$py" -c 'import glob, os, nvidia
print(":".join(sorted({os.path.dirname(f) for p in nvidia.__path__ for f in glob.glob(os.path.join(p, "*", "lib", "lib*.so*"))})))' 2>/dev/null || true)"
      [ -n "$dirs" ] && DTRAIN_CUDA_LIBS_FROM="the nvidia-* Python wheels of $py"
    fi
  fi
  if [ -n "$dirs" ]; then
    local missing; missing="$(dtrain_cuda_missing "$dirs")"
    [ -z "$missing" ] || DTRAIN_CUDA_LIBS_FROM="$DTRAIN_CUDA_LIBS_FROM (without $missing)"
    export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    return 0
  fi
  if [ -z "$dtrain_cuda_sonames" ]; then
    DTRAIN_CUDA_LIBS_FROM="none found (share/cuda-libraries.txt, the list of what to look for, is missing)"
    return 0
  fi
  local first="${dtrain_cuda_sonames%%[[:space:]]*}"
  if command -v ldconfig >/dev/null 2>&1 || [ -x /sbin/ldconfig ]; then
    # Every library must be known to the loader, libcudnn's parts included:
    # libcudart alone (a toolkit without cuDNN or NCCL) is not an installation.
    local names so lacking=""
    names="$({ command -v ldconfig >/dev/null 2>&1 && ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null |
             awk 'NF > 1 { print $1 }')"
    for so in $dtrain_cuda_sonames; do
      printf '%s\n' "$names" | grep -qxF "$so" || lacking="$lacking $so"
    done
    if [ -z "$lacking" ]; then
      DTRAIN_CUDA_LIBS_FROM="the system's libraries (ldconfig)"
      return 0
    fi
    if printf '%s\n' "$names" | grep -qxF "$first"; then
      DTRAIN_CUDA_LIBS_FROM="none found (no DTRAIN_CUDA_LIBS, no nvidia-* Python wheels; ldconfig knows $first but not${lacking})"
      return 0
    fi
  fi
  DTRAIN_CUDA_LIBS_FROM="none found (no DTRAIN_CUDA_LIBS, no nvidia-* Python wheels, no $first known to ldconfig)"
  return 0
}
