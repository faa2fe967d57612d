# Session 9, branch s9-dec: decode rows (tiles body for 8 <= m <= 16) and the small shapes on the
# H200. Run from the lead's checkout after `bash .gpu-mb/setup.sh dec` (the bundled binaries in
# B); OUT = where the raw results go. One device call runs all of it, in this order: correctness
# first, then Iron's rows and cuBLAS (torch.matmul) in the same call, both with the L2 flushed
# (a 256 MiB write before each sample) and without.
set -u
B=${B:-/tmp/b/dec/bin}; export LD_LIBRARY_PATH=$B XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ic} IRON_NO_REBUILD=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
echo "== unit $(el)"; timeout 60 $B/iron_unit_tests --gtest_filter='GemmDeterminism.*Cuda:GemmRoute*:GemmSelector*' > $OUT/unit.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED" $OUT/unit.txt | tail -6
echo "== iron test cuda $(el)"; timeout 60 $B/iron test --backend cuda -f iron_gemm > $OUT/test-cuda.txt 2>&1; grep -v "^PASS" $OUT/test-cuda.txt | tail -4
echo "== bench (flushed) $(el)"
timeout 80 $B/iron bench -f iron_gemm/m --backend cuda --dtype bf16 --samples 50 --flush-l2 -v > $OUT/bench.txt 2>&1
grep -E "iron_gemm/m(1|2|4|8|16|26|49|96|256)_" $OUT/bench.txt | grep -v m2048 | cut -c1-150
if [ "${RUN:-1}" = 2 ]; then echo "== bench decode rows, no flush $(el)"
timeout 40 $B/iron bench -f _n14336_k4096 --backend cuda --dtype bf16 --samples 100 -v > $OUT/bench-noflush.txt 2>&1
grep -E "iron_gemm/m(1|2|4|8|16)_" $OUT/bench-noflush.txt | cut -c1-150; fi
echo "== peers (cuBLAS, flushed, then not) $(el)"
F=m96_n512,m256_n512,_n96_k5120,_n14336_k4096
timeout 40 python3 bench/peers/gemm_peers.py --out $OUT/peers-flush.json --sources cublas --filter $F --samples 50 --flush-l2 > $OUT/peers.txt 2>&1
timeout 30 python3 bench/peers/gemm_peers.py --out $OUT/peers-noflush.json --sources cublas --filter _n14336_k4096 --samples 100 >> $OUT/peers.txt 2>&1
grep -E "^ok|^FAIL|not ok" $OUT/peers.txt | grep -v m2048 | cut -c1-75
echo "== iron run variants (no flush, 200 samples) $(el)"
v() { echo "-- $*"; timeout 20 $B/iron run iron_gemm --backend cuda --dtype bf16 "$@" --samples 200 2>&1 | grep -E "^plan|timing|error|rror" | sed 's/^plan iron_gemm \[bf16\]: //' | cut -c1-170; }
D="--arg n=14336 --arg k=4096 --arg b_trans=1"
if [ "${RUN:-1}" = 1 ]; then {
for m in 1 4 8 16; do v --arg m=$m $D; done
for m in 4 8 16; do for ks in 1 2 4 8; do v --arg m=$m $D --arg mma=1 --arg ksplit=$ks; done; done
for m in 8 16; do v --arg m=$m $D --arg mma=0; done
for m in 26 49; do
  v --arg m=$m --arg n=96 --arg k=5120 --arg b_trans=1
  v --arg m=$m --arg n=96 --arg k=5120 --arg b_trans=1 --arg ksplit=16 --arg mma=0
  v --arg m=$m --arg n=96 --arg k=5120 --arg b_trans=1 --arg tile=3 --arg mma=1
done
} > $OUT/variants.txt 2>&1; else {
# Run 2: the 5-deep tiles against the lanes at m = 4 .. 16, the lanes' K slices at m <= 4, and
# the small shapes' split counts and tiles.
for m in 4 8 12 16; do for ks in 1 2 8; do v --arg m=$m $D --arg mma=1 --arg ksplit=$ks; done; done
for m in 8 9 12; do v --arg m=$m $D --arg mma=0; done
v --arg m=1 $D --arg ksplit=4; v --arg m=2 $D --arg ksplit=1; v --arg m=4 $D --arg ksplit=4
S="--arg n=512 --arg k=2048 --arg b_trans=1"
for m in 96 256; do v --arg m=$m $S; for sp in 4 8 32; do v --arg m=$m $S --arg splits=$sp; done; v --arg m=$m $S --arg tile=2; done
S="--arg n=96 --arg k=5120 --arg b_trans=1"
v --arg m=256 $S; for sp in 8 16; do v --arg m=256 $S --arg splits=$sp; done; v --arg m=256 $S --arg tile=2
} > $OUT/variants.txt 2>&1; fi; cat $OUT/variants.txt
echo "== done $(el)"
