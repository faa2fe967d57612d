#!/usr/bin/env bash
# `pip install .` as CI can run it, offline: Debian's setuptools builds the package from this
# checkout (--no-build-isolation --no-index), reusing the CMake build directory (IRON_BUILD_DIR:
# `cmake --build` of iron_c, iron and iron-runner, nothing when they are up to date), into a
# private target folder; then Python imports it from there, outside the source tree, finds the
# library and the CLI inside the installed package, and runs a few of the numpy tests with it.
#
#   check_pip_install.sh SOURCE_DIR BUILD_DIR PYTHON WORK_DIR
set -euo pipefail
src=$1 build=$2 py=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
cd "$src"
SECONDS=0
IRON_BUILD_DIR="$build" "$py" -m pip install -q --no-build-isolation --no-index --no-deps --target "$work/site" . \
  2>&1 | grep -v "Running pip as the 'root' user" || true
echo "check_pip_install: pip install took ${SECONDS} s"
test -f "$work/site/iron/_lib/libiron_c.so" || { echo "FAIL: the package holds no libiron_c.so"; exit 1; }
cd "$work"
PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1 "$py" - "$work/site" <<'PY'
import pathlib, sys
import iron
site = pathlib.Path(sys.argv[1]).resolve()
assert pathlib.Path(iron.__file__).resolve().is_relative_to(site), iron.__file__
assert iron.LIB_PATH.resolve().is_relative_to(site), iron.LIB_PATH
assert iron.cli_path().resolve().is_relative_to(site), iron.cli_path()
print("check_pip_install: iron %s from %s" % (iron.__version__, iron.LIB_PATH))
PY
PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1 IRON_TEST_BACKENDS=interp "$py" -m pytest -q -p no:cacheprovider \
  "$src/tests/python/test_numpy.py" -k "lists or add_and_mul or cli_test"
echo "check_pip_install: ok"
