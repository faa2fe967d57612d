"""Builds the `iron` Python package: the pure-Python package in python/iron plus three native files
it loads or runs, copied into iron/_lib/: libiron_c.so (the C ABI, loaded with ctypes) and the
`iron` and `iron-runner` executables (iron.test / iron.bench).

Where the native files come from:
  IRON_PREBUILT=DIR   copied from DIR (a CMake build directory, or a flat folder such as the GPU
                      bundle .gpu/); nothing is compiled.
  IRON_BUILD_DIR=DIR  `cmake --build DIR --target iron_c iron iron-runner`: in an existing build
                      directory this builds only what is out of date (nothing, right after
                      `make build`), so CI never compiles the tree twice. Default: ./build,
                      configured (Ninja, Release) when it does not exist yet.

Offline, with Debian's python3-setuptools: `pip install --no-build-isolation .` (docs/python.md).
"""

import os
import pathlib
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent
NATIVE = [("libiron_c.so", "lib"), ("iron", "bin"), ("iron-runner", "bin")]


def version():
    m = re.search(r"project\(iron\b[^)]*\bVERSION\s+([0-9][0-9.]*)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        raise RuntimeError("setup.py: no VERSION in CMakeLists.txt's project()")
    return m.group(1)


def cmake_build(build):
    if not (build / "CMakeCache.txt").exists():
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
    jobs = os.environ.get("IRON_BUILD_JOBS", "2")
    subprocess.check_call(["cmake", "--build", str(build), "--target", "iron_c", "iron", "iron-runner", "-j", jobs])


def find_native(folder, name, sub):
    for candidate in (folder / sub / name, folder / name):
        if candidate.is_file():
            return candidate
    raise RuntimeError("setup.py: %s not found in %s or %s" % (name, folder / sub, folder))


class BuildWithNative(build_py):
    """build_py, then the native files into the package."""

    def run(self):
        super().run()
        prebuilt = os.environ.get("IRON_PREBUILT")
        if prebuilt:
            folder = pathlib.Path(prebuilt).resolve()
        else:
            folder = pathlib.Path(os.environ.get("IRON_BUILD_DIR") or ROOT / "build").resolve()
            cmake_build(folder)
        for name, sub in NATIVE:
            src = find_native(folder, name, sub)
            out = pathlib.Path(self.build_lib) / "iron" / "_lib"
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / name)


cmdclass = {"build_py": BuildWithNative}

# One wheel for every Python 3 on Linux x86-64: the package has no extension module (the native
# code is a plain shared library loaded with ctypes), so the tag is py3-none-<platform>.
try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel as _bdist_wheel
    except ImportError:
        _bdist_wheel = None

if _bdist_wheel is not None:
    class BdistWheel(_bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = BdistWheel

setup(
    version=version(),
    packages=["iron"],
    package_dir={"": "python"},
    cmdclass=cmdclass,
    options={"build": {"build_base": "build/setuptools"}},
    zip_safe=False,
)
