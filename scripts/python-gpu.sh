#!/usr/bin/env bash
# The Python package on the GPU machine (docs/python.md), from the checkout's root after
# `make gpu-bundle` here and sending .gpu/: installs the package with pip from the bundle's
# prebuilt files (IRON_PREBUILT=.gpu: nothing is compiled there, no network; if that Python's
# setuptools cannot build a wheel offline, it says so and uses python/ in place), imports it from
# the install folder, and runs tests/python there: test_torch.py (Iron families on torch CUDA
# tensors against torch, the current stream, zero-copy) and test_numpy.py on the interpreter and
# CUDA (numpy arrays, uploaded and downloaded). Uses pytest when that Python has it, else
# tests/python/minitest.py; then bench/python_overhead.py (host microseconds per call, Iron from
# Python against torch eager). Writes the log to $OUT/python-gpu.log when OUT is set.
#
#   bash scripts/python-gpu.sh            # PYTHON=python3 by default
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=$(mktemp -d /tmp/iron-python.XXXXXX)
log=${OUT:+$OUT/python-gpu.log}
log=${log:-$work/python-gpu.log}
{
  echo "python-gpu: $($py --version 2>&1), torch $($py -c 'import torch; print(torch.__version__, torch.cuda.is_available())' 2>&1)"
  SECONDS=0
  if IRON_PREBUILT=.gpu "$py" -m pip install -q --no-build-isolation --no-index --no-deps --target "$work/site" . ; then
    echo "python-gpu: pip install took ${SECONDS} s"
    export PYTHONPATH="$work/site"
  else
    # A Python whose setuptools cannot build wheels offline (no `wheel` beside a setuptools
    # older than 70.1): the same package from the source tree, with the bundle's library and CLI.
    echo "python-gpu: pip install failed (see above): using python/ with IRON_LIB=.gpu/libiron_c.so"
    export PYTHONPATH="$PWD/python" IRON_LIB="$PWD/.gpu/libiron_c.so" IRON_CLI="$PWD/.gpu/iron"
  fi
  export PYTHONDONTWRITEBYTECODE=1 IRON_TEST_BACKENDS=${IRON_TEST_BACKENDS:-interp,cuda}
  src=$PWD
  cd "$work"
  "$py" -c 'import iron; print("python-gpu: iron", iron.__version__, "from", iron.LIB_PATH); print("python-gpu: cuda", iron.devices("cuda"))'
  if "$py" -c 'import pytest' 2>/dev/null; then
    "$py" -m pytest -v -p no:cacheprovider "$src/tests/python"
  else
    echo "python-gpu: no pytest in this Python: tests/python/minitest.py"
    "$py" "$src/tests/python/minitest.py" "$src/tests/python/test_torch.py" "$src/tests/python/test_numpy.py"
  fi
  rc=$?
  # The host cost of a call from Python against torch eager (one JSON line).
  "$py" "$src/bench/python_overhead.py" || rc=1
  echo "python-gpu: exit $rc"
  exit $rc
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
