#!/usr/bin/env bash
# Installs every Debian package Iron's build and tests need. Idempotent: packages already
# present are skipped, so a second run costs one dpkg query.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config ccache
  # Vulkan: loader headers, lavapipe ICD (Mesa), vulkaninfo for diagnostics
  libvulkan-dev mesa-vulkan-drivers vulkan-tools
  # GLSL -> SPIR-V through glslang's C API, validation through SPIRV-Tools
  glslang-dev glslang-tools spirv-tools
  # Protocol JSON, CLI parsing, content hashes
  nlohmann-json3-dev libcli11-dev libxxhash-dev
  # Unit tests and host benchmarks
  libgtest-dev libbenchmark-dev
  # The host clang checks every emitted MSL file against tests/msl's Metal shim (ctest msl.*)
  clang
  # `iron report` inlines Debian's Chart.js; tests/report renders it with headless Chromium
  # (chromium: ~122 MB download, ~400 MB installed with its libraries, ~35 s)
  libjs-chart.js chromium
  # HIP: clang++-15 compiles every kernel to AMDGPU code objects offline (gfx90a, gfx940), with
  # llvm-readelf-15 for their resource notes and libamdhip64 for the HIP device's "no AMD GPU"
  # (hipcc: 66 MB download, +353 MB installed with clang-15, llvm-15, lld-15 and
  # rocm-device-libs, ~8 s here)
  hipcc
  # `iron run` reads and writes .npy: the interop test has NumPy write the inputs and read the
  # outputs (python3-numpy: ~7 MB download, ~15 s)
  python3-numpy
  # The Python package (docs/python.md): pip and setuptools build it offline
  # (--no-build-isolation), pytest runs its tests (python3-pytest: ~1 MB, ~4 s; the others come
  # with the image)
  python3-pip python3-setuptools python3-wheel python3-pytest
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
