#!/usr/bin/env bash
# The GPU run, in one go (about 8 minutes on one H200): never needed by the tests or CI.
#
#   bash benchmarks/gpu.sh OUT            # OUT: a folder for gpu.json, the figures and gpu.log
#   bash benchmarks/gpu.sh OUT --check    # only the library checks (runs on a CPU too)
#
# For a machine with no network and its own Python with a CUDA-enabled JAX (0.11.x on
# Python 3.12; NumPy, SciPy, SymPy, scikit-learn, matplotlib, optax, jaxtyping, tqdm,
# threadpoolctl, pytest and hypothesis already there). It
#   1. installs attnclust into that Python without dependencies (pip --no-deps --no-index,
#      or PYTHONPATH where its setuptools is too old to build it);
#   2. checks that every module the run imports is there, installing what is missing from
#      wheels carried in benchmarks/wheels/ (none are needed for the image described above:
#      the library imports IPython and ipywidgets only inside its widgets);
#   3. runs the unit tests that touch numerics (the pooling, the layers, the risks and the
#      large-L limits) on the GPU;
#   4. runs benchmarks/gpu.py: the library checks on this JAX version, the device's exp
#      throughput and memory bandwidth, the training step at L = 256, 1024, 4096 and identity
#      attention at L = 30k, 100k, 300k as fractions of the exp roofline, and fit_many over
#      256 seeds sharded over the devices (OUT/gpu.json);
#   5. draws the training figures at full size (python -m attnclust reproduce --size full).
# Each stage has its own time limit, so one slow stage cannot take the others' time.
set -uo pipefail
OUT=${1:?usage: bash benchmarks/gpu.sh OUT [--check]}
MODE=${2:-}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
exec > >(tee "$OUT/gpu.log") 2>&1
echo "== $(date -u +%FT%TZ) $($PY --version 2>&1) at $(command -v "$PY"); nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo none)"

# 1. attnclust, no dependencies, no network (its build needs setuptools >= 77 for the
#    license field; with an older one the package, pure Python, is put on PYTHONPATH)
if ! "$PY" -m pip install -q --no-deps --no-index --no-build-isolation -e . >"$OUT/pip.txt" 2>&1; then
  echo "pip could not install attnclust here (see below); using PYTHONPATH=$PWD instead"
  tail -3 "$OUT/pip.txt"
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
rm -f "$OUT/pip.txt"

# 2. what the run imports; carried wheels for anything missing
NEEDED="jax jaxlib optax jaxtyping numpy scipy sympy sklearn matplotlib tqdm threadpoolctl pytest hypothesis"
missing=$("$PY" -c "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))" $NEEDED)
if [ -n "$missing" ]; then
  echo "missing: $missing"
  if ls benchmarks/wheels/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps benchmarks/wheels/*.whl || exit 1
  else
    echo "no wheels in benchmarks/wheels/ to install them from"; exit 1
  fi
fi
"$PY" -c "import jax, attnclust; print('jax', jax.__version__, 'devices', jax.devices(), 'attnclust', attnclust.__version__)" || exit 1

if [ "$MODE" = "--check" ]; then
  exec "$PY" benchmarks/gpu.py "$OUT" --check
fi
export XLA_PYTHON_CLIENT_PREALLOCATE=false   # measure memory as used, not preallocated
status=0

# 3. the unit tests that touch numerics (beartype, for the shape checker, is not on the image)
echo "== unit tests"
ATTNCLUST_TYPECHECK=0 timeout 200 "$PY" -m pytest -q -p no:cacheprovider -p no:xdist \
  tests/test_numerics.py tests/test_attention.py tests/test_risk.py tests/test_limits.py || status=1

# 4. roofline, step, identity attention, fit_many (OUT/gpu.json)
echo "== benchmarks/gpu.py"
timeout 170 "$PY" benchmarks/gpu.py "$OUT" || status=1

# 5. the training figures at full size (PNG only: one file a figure)
echo "== figures"
timeout 100 "$PY" -m attnclust reproduce training-dimension training-inits training-k-heads \
  training-outcomes training-separability training-tilt --size full --no-pdf --quiet --out "$OUT" || status=1
echo "== done, exit $status: $(ls "$OUT" | tr '\n' ' ')"
exit $status
