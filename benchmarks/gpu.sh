#!/usr/bin/env bash
# Run the benchmark on an accelerator at full sizes (never needed by tests or CI).
#
#   bash benchmarks/gpu.sh                 # writes benchmarks/results_gpu.json
#   OUT=/some/dir bash benchmarks/gpu.sh   # also copies the results and log there
#
# Needs a Python environment whose jax sees the accelerator (e.g. jax[cuda12] at the
# version pinned in requirements.txt) plus requirements.txt and
# benchmarks/requirements.txt. Uses .venv when present, else python3 on PATH. The run
# refuses to start on a CPU-only JAX, so a CPU number is never mistaken for a GPU one.
# Full sizes: fit_many over 256 seeds, identity attention up to L = 1,000,000 (blocked,
# block 8192) and unblocked where the L x L matrix fits in 16 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
"$PY" - <<'PYCHECK'
import jax, sys
d = jax.devices()
print("devices:", d)
if d[0].platform == "cpu":
    sys.exit("benchmarks/gpu.sh: JAX sees no accelerator (install jax with CUDA/ROCm support); not running")
PYCHECK
"$PY" -m pip install -q --no-deps -e . >/dev/null 2>&1 || true
export XLA_PYTHON_CLIENT_PREALLOCATE=false   # measure memory as used, not preallocated
"$PY" benchmarks/run.py --size full --out benchmarks/results_gpu.json \
  --command "bash benchmarks/gpu.sh" 2>&1 | tee benchmarks/results_gpu.log
if [ -n "${OUT:-}" ]; then cp benchmarks/results_gpu.json benchmarks/results_gpu.log "$OUT"/; fi
