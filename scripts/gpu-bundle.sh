#!/usr/bin/env bash
# Prepares what the GPU machine needs, in ignored folders that `carry` can send:
#   .gpu/  the iron, iron-runner, iron_host_bench and iron_collective_bench binaries (static libstdc++; glslang and
#          SPIRV-Tools linked in), libiron_c.so (the Python package's C ABI),
#          bench/peers/torch_peers.py and chart.umd.min.js (iron report)
#   .gl/   Debian's Vulkan loader and the GL vendor-neutral EGL library: the NVIDIA Vulkan
#          driver there loads libEGL.so.1 while initializing and fails without it.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p .gpu .gl
cp "$build/bin/iron" "$build/bin/iron-runner" .gpu/
# The C ABI the Python package loads (python/iron; scripts/python-gpu.sh installs it there),
# stripped of what dlopen does not need (12-13 MB instead of 15-25), so the bundle stays within
# what travels to the GPU machine.
if [ -f "$build/lib/libiron_c.so" ]; then strip --strip-unneeded -o .gpu/libiron_c.so "$build/lib/libiron_c.so"; fi
# Host benchmarks and Debian's shared Google Benchmark library (found next to it via rpath $ORIGIN).
if [ -x "$build/bin/iron_host_bench" ]; then
  cp "$build/bin/iron_host_bench" .gpu/
  cp "$build"/bin/libbenchmark.so* .gpu/ 2>/dev/null || true
fi
# NCCL collectives across the GPUs of a multi-GPU machine (libnccl found there at run time).
if [ -x "$build/bin/iron_collective_bench" ]; then cp "$build/bin/iron_collective_bench" .gpu/; fi
# Chart.js for `iron report`, which finds it next to the iron binary (the GPU machine has no
# libjs-chart.js). The first UMD build Debian's package provides.
chart=""
for f in /usr/share/javascript/chart.js/chart.umd.min.js /usr/share/javascript/chart.js/chart.umd.js \
         /usr/share/javascript/chart.js/chart.min.js; do
  if [ -f "$f" ]; then chart=$f; break; fi
done
if [ -z "$chart" ]; then
  echo "gpu-bundle: Chart.js not found (install libjs-chart.js: scripts/install-deps.sh)" >&2
  exit 1
fi
cp "$chart" .gpu/chart.umd.min.js
# The peer timing script (PyTorch on the GPU machine).
mkdir -p .gpu/peers && cp bench/peers/*.py .gpu/peers/ 2>/dev/null || true
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo /.gl/ >> .git/info/exclude
if ! ls .gl/libvulkan1_*.deb .gl/libegl1_*.deb .gl/libglvnd0_*.deb > /dev/null 2>&1; then
  mkdir -p /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update -qq
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0)
fi
du -sh .gpu .gl
