# Session 8, branch s8-dec: the decode rows kernel, the small shapes and the cuBLASLt route on the
# H200. B = the directory holding iron, iron-runner and iron_unit_tests of this branch's build;
# OUT = where the results go. Every figure in this folder's README comes from one run of this.
set -u
B=${B:-build/bin}; U=${U:-build/tests}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/iron-c}
run() { echo "== $*"; "$@"; }
# Correctness: the decode kernel's cases and every other iron_gemm case down the default MMA path,
# the selector tests, split-K and decode bit-exact over 100 runs, the routed plan against Iron's.
timeout 300 $U/iron_unit_tests --gtest_filter='Gemm*' > $OUT/gemm-unit.txt 2>&1; grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED" $OUT/gemm-unit.txt | tail -12
timeout 200 $B/iron test --backend cuda -f iron_gemm > $OUT/test-cuda.txt 2>&1; grep -v "^PASS" $OUT/test-cuda.txt | tail -6
# Speed: every iron_gemm row (decode and small rows multiply a [N, K] weight) and cuBLASLt's rows,
# same samples, L2 flushed.
timeout 300 $B/iron bench -f iron_gemm --backend cuda --dtype bf16 --samples 100 --flush-l2 -v > $OUT/bench.txt 2>&1; grep -vE "^\s*$" $OUT/bench.txt | tail -25
timeout 200 $B/iron bench -f cublaslt_gemm --backend cuda --dtype bf16 --samples 100 --flush-l2 > $OUT/cublaslt.txt 2>&1; grep -vE "^\s*$" $OUT/cublaslt.txt | tail -20
# Variants through `iron run --samples` (no L2 flush: compare with each other only): the two
# decode bodies and their K slices at N = 14336, and the small shapes on the default route and
# forced onto each decode body (tile 3).
v() { echo "== $*"; $B/iron run iron_gemm --backend cuda --dtype bf16 "$@" --samples 200 2>&1 | grep -E "^plan|timing|error"; }
{
for m in 1 16; do for ks in 2 4; do v --arg m=$m --arg n=14336 --arg k=4096 --arg b_trans=1 --arg mma=0 --arg ksplit=$ks; done; done
for m in 8 16; do for ks in 2 8; do v --arg m=$m --arg n=14336 --arg k=4096 --arg b_trans=1 --arg mma=1 --arg ksplit=$ks; done; done
for shape in "1 96 5120" "26 96 5120" "49 96 5120"; do
  set -- $shape
  v --arg m=$1 --arg n=$2 --arg k=$3 --arg b_trans=1
  v --arg m=$1 --arg n=$2 --arg k=$3 --arg b_trans=1 --arg tile=3 --arg mma=1
done
} > $OUT/variants.txt 2>&1; cat $OUT/variants.txt
