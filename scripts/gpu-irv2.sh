#!/usr/bin/env bash
# The IR v2 run on the GPU machine (docs/gpu-machine.md). PART=A: the devices, the corpus on
# CUDA, Vulkan and the interpreter, the corpus on CUDA once per cooperative-tile path
# (IRON_CUDA_MMA=software|wmma|mma) and on Vulkan once per path (IRON_VK_MMA=software|coopmat;
# TILE_FILTER narrows both to the tile kernels), the GPU unit
# tests (semantics and conformance on both drivers), mutation testing and the cross-backend
# fuzzer on CUDA and Vulkan. PART=B: a three-process snapshot of every bench on CUDA and its
# diff against the snapshot taken before IR v2 (BEFORE, default
# docs/benchmarks/ir-v2-2026-11-30/before/before-irv2-cuda.json). Binaries come from $BIN
# (default .gpu). Results land under $OUT: log-$PART.txt and irv2-$PART.tgz (the device tool
# returns at most 8 files).
set -u
final=${OUT:-$PWD/gpu-out}
out=/tmp/iron-irv2/out
bin=${BIN:-.gpu}
part=${PART:-A}
programs=${PROGRAMS:-3000}
samples=${SAMPLES:-100}
before=${BEFORE:-$PWD/docs/benchmarks/ir-v2-2026-11-30/before/before-irv2-cuda.json}
mkdir -p "$out" "$final"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export IRON_NO_REBUILD=1 IRON_SNAP_DIR=/tmp/iron-irv2/snaps XDG_CACHE_HOME=/tmp/iron-irv2/cache
cd "$bin"
step() { echo "== $*" | tee -a "$out/log.txt"; cp "$out/log.txt" "$final/log-$part.txt"; }
trap 'cp "$out/log.txt" "$final/log-$part.txt"; tar -C /tmp/iron-irv2 -czf "$final/irv2-$part.tgz" out snaps 2>/dev/null' EXIT
last() { tail -"${2:-1}" "$1" | tee -a "$out/log.txt"; }
if [ "$part" = A ]; then
  step version; ./iron --version 2>&1 | tee -a "$out/log.txt"
  step device; ./iron device > "$out/device.txt" 2>&1; last "$out/device.txt" 12
  for b in cuda vulkan interp; do
    step "test $b"; ./iron test --backend "$b" > "$out/test-$b.txt" 2>&1; echo "rc=$?" >> "$out/test-$b.txt"; last "$out/test-$b.txt" 2
  done
  filter=()
  [ -n "${TILE_FILTER:-}" ] && filter=(-f "$TILE_FILTER")
  for path in software wmma mma; do
    step "test cuda with IRON_CUDA_MMA=$path ${TILE_FILTER:-}"
    IRON_CUDA_MMA=$path ./iron test --backend cuda "${filter[@]}" > "$out/test-cuda-$path.txt" 2>&1
    echo "rc=$?" >> "$out/test-cuda-$path.txt"; last "$out/test-cuda-$path.txt" 2
  done
  for path in software coopmat; do
    step "test vulkan with IRON_VK_MMA=$path ${TILE_FILTER:-}"
    IRON_VK_MMA=$path ./iron test --backend vulkan "${filter[@]}" > "$out/test-vulkan-$path.txt" 2>&1
    echo "rc=$?" >> "$out/test-vulkan-$path.txt"; last "$out/test-vulkan-$path.txt" 2
  done
  if [ -x ./iron_unit_tests ]; then
    step "GPU unit tests (semantics, conformance, tiles) on cuda and vulkan"
    ./iron_unit_tests --gtest_filter="${GTEST_FILTER:-*Semantics*:*Conformance*:*Tile*}" > "$out/unit-gpu.txt" 2>&1
    last "$out/unit-gpu.txt" 3
  fi
  step "mutation testing on cuda"; ./iron test --mutate --backend cuda > "$out/mutate-cuda.txt" 2>&1; last "$out/mutate-cuda.txt"
  step "fuzz interp vs cuda and vulkan"
  ./iron fuzz --backends interp,cuda,vulkan --programs "$programs" --reports 8 > "$out/fuzz.txt" 2>&1
  last "$out/fuzz.txt" 4
fi
if [ "$part" = B ]; then
  step "calibrate"; ./iron calibrate --backend cuda > "$out/calibrate.txt" 2>&1; last "$out/calibrate.txt" 3
  step "snapshot after IR v2 (3 processes)"
  ./iron snap after-irv2-cuda --backend cuda --samples "$samples" --flush-l2 --force > "$out/snap-after.txt" 2>&1
  last "$out/snap-after.txt"
  step "diff before -> after"
  ./iron diff "$before" after-irv2-cuda > "$out/diff.txt" 2>&1; last "$out/diff.txt" 3
  cp "$out/diff.txt" "$final/diff.txt"
fi
echo done | tee -a "$out/log.txt"
