# The GEMM benchmarks of issue 12 on the H200, in one device call: the unit tests of the cuBLASLt
# path (bit-exact repeats, every layout, the atomics policy), Iron's GEMM rows (`iron bench -f
# gemm`: the iron_gemm family where it is registered, and cublaslt_gemm, the cuBLASLt path through
# Iron) as a snapshot, the IRON_GEMM_ATOMICS=1 A/B of the cuBLASLt rows, and the peers (cuBLAS via
# torch.matmul, an autotuned Triton matmul) at the same shapes; then `iron diff` of Iron against
# the peers. From the checkout's root on the GPU machine, with the bundle of `make gpu-bundle`
# (B, default .gpu: iron and iron-runner), the unit-test binary (U, default $B/iron_unit_tests,
# else build/tests/iron_unit_tests) and $OUT set. PART=1 runs the Iron half,
# PART=2 the peers (Triton autotuning compiles ~40 kernels: a few minutes); unset runs both.
set -u
B=${B:-.gpu}
U=${U:-$B/iron_unit_tests}
[ -x "$U" ] || U=build/tests/iron_unit_tests
PART=${PART:-all}
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/iron-cache}
mkdir -p "$OUT/snaps"
if [ "$PART" = all ] || [ "$PART" = 1 ]; then
  echo "== unit: the cuBLASLt path and the sampled oracle"
  timeout 240 "$U" --gtest_filter='Blas*:HarnessSampled*' > "$OUT/blas-unit.txt" 2>&1
  echo "rc=$?" >> "$OUT/blas-unit.txt"
  grep -E "^m=|^\[  (PASSED|FAILED|SKIPPED) |FAILED TEST|tests ran|^rc=" "$OUT/blas-unit.txt" | tail -30
  echo "== Iron rows (iron_gemm, cublaslt_gemm): bf16, 100 samples, L2 flushed, 2 processes"
  IRON_SNAP_DIR="$OUT/snaps" timeout 420 "$B/iron" snap gemm-h200 -f gemm --backend cuda --dtype bf16 \
    --samples 100 --flush-l2 --processes 2 --force > "$OUT/snap.txt" 2>&1
  echo "rc=$?" >> "$OUT/snap.txt"
  tail -40 "$OUT/snap.txt"
  echo "== cuBLASLt with IRON_GEMM_ATOMICS=1 (A/B only: atomic split-K allowed)"
  IRON_GEMM_ATOMICS=1 IRON_SNAP_DIR="$OUT/snaps" timeout 240 "$B/iron" snap gemm-h200-atomics -f cublaslt_gemm \
    --backend cuda --samples 100 --flush-l2 --processes 2 --force > "$OUT/snap-atomics.txt" 2>&1
  echo "rc=$?" >> "$OUT/snap-atomics.txt"
  "$B/iron" diff "$OUT/snaps/gemm-h200.json" "$OUT/snaps/gemm-h200-atomics.json" > "$OUT/diff-atomics.txt" 2>&1
  tail -20 "$OUT/diff-atomics.txt"
fi
if [ "$PART" = all ] || [ "$PART" = 2 ]; then
  echo "== peers: cuBLAS (torch.matmul) and Triton at the same shapes"
  timeout 540 python3 bench/peers/gemm_peers.py --out "$OUT/gemm-peers.json" --samples 100 --flush-l2 \
    --measured-gbps 4270 > "$OUT/peers.txt" 2>&1
  echo "rc=$?" >> "$OUT/peers.txt"
  cat "$OUT/peers.txt"
  if [ -f "$OUT/snaps/gemm-h200.json" ]; then
    "$B/iron" diff "$OUT/snaps/gemm-h200.json" "$OUT/gemm-peers.json" > "$OUT/diff-peers.txt" 2>&1
    tail -40 "$OUT/diff-peers.txt"
  fi
fi
