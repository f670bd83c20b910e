#!/usr/bin/env bash
# Builds benchmarks/kernel/libpool.so (the FFI kernels of pool.cc) with g++ against the XLA
# FFI headers that jaxlib ships. For make bench only; nothing else needs it.
#   bash benchmarks/kernel/build.sh [PYTHON [OUT]]   # OUT: the library (default: libpool.so here)
set -euo pipefail
PY=$(realpath -s "$(command -v "${1:-python3}")")  # absolute, symlinks kept (a venv): the script changes directory
OUT=$(realpath -m "${2:-$(dirname "$0")/libpool.so}")
cd "$(dirname "$0")"
INC=$("$PY" -c "import jax; print(jax.ffi.include_dir())")
# -ffast-math lets GCC call glibc's vector expf (16 floats at a time with AVX-512); the
# logits are finite and <= 0 by construction, so no inf or NaN reaches it
g++ -std=c++17 -O3 -march=native -ffast-math -fopenmp -fPIC -shared -w -I"$INC" pool.cc -o "$OUT"
echo "built $OUT"
