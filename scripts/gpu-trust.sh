#!/usr/bin/env bash
# The trust run on the GPU machine (docs/gpu-machine.md): the corpus on every backend, the corpus
# under compute-sanitizer (memcheck, racecheck, synccheck) with a planted race that racecheck must
# find, the cross-backend fuzzer on CUDA (A) and on CUDA and Vulkan together (B), the semantics tests on both drivers, mutation
# testing on CUDA, two witnesses and two back-to-back snapshots of identical code with their
# diffs. PART=A, PART=B or PART=C runs one third (each fits one 10-minute call on the H200: A took
# 2 minutes there, B 6 minutes, and one three-process snapshot of every bench about 3.5 minutes, so
# C's two snapshots need a call of their own; AA_FILTER narrows them, e.g. AA_FILTER=iron_add). Binaries come from $BIN
# (default .gpu: iron, iron-runner and, for the semantics tests, iron_unit_tests). Results land
# under $OUT: `log.txt` (every step's summary line) and `trust-$PART.tgz` (every step's full
# output; the device tool returns at most 8 files).
set -u
final=${OUT:-$PWD/gpu-out}
out=/tmp/iron-trust/out
bin=${BIN:-.gpu}
part=${PART:-all}
programs=${PROGRAMS:-5000}
samples=${SAMPLES:-30}
mkdir -p "$out" "$final"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export IRON_NO_REBUILD=1 IRON_SNAP_DIR=/tmp/iron-trust/snaps XDG_CACHE_HOME=/tmp/iron-trust/cache
cd "$bin"
step() { echo "== $*" | tee -a "$out/log.txt"; cp "$out/log.txt" "$final/log-$part.txt"; }
trap 'cp "$out/log.txt" "$final/log-$part.txt"; tar -C /tmp/iron-trust -czf "$final/trust-$part.tgz" out snaps 2>/dev/null' EXIT
last() { tail -"${2:-1}" "$1" | tee -a "$out/log.txt"; }
if [ "$part" != B ]; then
  step device; ./iron device > "$out/device.txt" 2>&1; last "$out/device.txt" 12
  for b in cuda vulkan interp; do
    step "test $b"; ./iron test --backend "$b" > "$out/test-$b.txt" 2>&1; echo "rc=$?" >> "$out/test-$b.txt"; last "$out/test-$b.txt" 2
  done
  for t in memcheck racecheck synccheck; do
    step "compute-sanitizer $t over the corpus on cuda"
    compute-sanitizer --tool "$t" --target-processes all --error-exitcode 99 ./iron test --backend cuda \
      > "$out/sanitizer-$t.txt" 2>&1
    echo "rc=$?" >> "$out/sanitizer-$t.txt"; grep -E 'SUMMARY|passed, |^rc=' "$out/sanitizer-$t.txt" | tail -3 | tee -a "$out/log.txt"
  done
  # The sanitizer must see the runner's kernels: the dropped-barrier mutants of RMSNorm race.
  step "racecheck must flag a planted race (RMSNorm mutants, dropped barrier)"
  compute-sanitizer --tool racecheck --target-processes all ./iron test --mutate --backend cuda -f iron_rmsnorm \
    > "$out/sanitizer-planted.txt" 2>&1
  grep -c -E 'Race reported|hazard' "$out/sanitizer-planted.txt" | sed 's/^/race reports: /' | tee -a "$out/log.txt"
  grep -E 'RACECHECK SUMMARY' "$out/sanitizer-planted.txt" | sort | uniq -c | tail -3 | tee -a "$out/log.txt"
  if [ -x ./iron_unit_tests ]; then
    step "semantics tests on cuda and vulkan"
    ./iron_unit_tests --gtest_filter='*Semantics*' > "$out/semantics.txt" 2>&1; last "$out/semantics.txt" 3
  fi
  step "mutation testing on cuda"; ./iron test --mutate --backend cuda > "$out/mutate-cuda.txt" 2>&1; last "$out/mutate-cuda.txt"
  step "fuzz interp vs cuda"
  ./iron fuzz --backends interp,cuda --programs "$programs" --reports 8 > "$out/fuzz-cuda.txt" 2>&1; last "$out/fuzz-cuda.txt"
fi
if [ "$part" = B ] || [ "$part" = all ]; then
  step "fuzz interp vs cuda and vulkan"
  ./iron fuzz --backends interp,cuda,vulkan --programs "$programs" --reports 8 > "$out/fuzz-vulkan.txt" 2>&1
  last "$out/fuzz-vulkan.txt" 4
  step "witness x2"
  ./iron test --backend cuda --witness "$out/witness-1.json" > /dev/null 2>&1
  ./iron test --backend cuda --witness "$out/witness-2.json" > /dev/null 2>&1
  ./iron diff "$out/witness-1.json" "$out/witness-2.json" > "$out/diff-witness.txt" 2>&1; last "$out/diff-witness.txt"
fi
if [ "$part" = C ] || [ "$part" = all ]; then
  filter=()
  [ -n "${AA_FILTER:-}" ] && filter=(-f "$AA_FILTER")
  step "two back-to-back snapshots of identical code ${AA_FILTER:-(every bench)}"
  ./iron snap aa1 "${filter[@]}" --backend cuda --samples "$samples" --flush-l2 --force > "$out/snap-aa1.txt" 2>&1
  last "$out/snap-aa1.txt"
  ./iron snap aa2 "${filter[@]}" --backend cuda --samples "$samples" --flush-l2 --force > "$out/snap-aa2.txt" 2>&1
  last "$out/snap-aa2.txt"
  ./iron diff aa1 aa2 > "$out/diff-aa.txt" 2>&1; last "$out/diff-aa.txt" 2
fi
echo done | tee -a "$out/log.txt"
