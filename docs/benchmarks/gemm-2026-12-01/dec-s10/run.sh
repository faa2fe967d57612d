# Session 10, branch s10-dec: decode rows and the small shapes on the H200 under both L2 flush
# protocols. Run on the device from the lead's checkout as `bash .gpu-mb/dec.sh` (it sources
# .gpu-mb/setup.sh dec: this branch's bundled binaries and scripts in $B); OUT = where the raw
# results go. One device call runs all of it, in
# this order: correctness first, then Iron's rows (iron bench) and cuBLAS (torch.matmul,
# bench/peers/gemm_peers.py) in the same call, each with the written flush (--flush-l2, as in
# sessions 8-9) and with the read flush (--flush-l2-read), then `iron run` variants of the decode
# lanes (read flush, 100 samples, the plan's own timer).
set -u
source .gpu-mb/setup.sh dec > /dev/null; cd $B  # the bundle: bin/, bench/, ... of this branch
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ic} IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1
R=/tmp/res; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== unit $(el)"
timeout 60 $BIN/iron_unit_tests --gtest_filter='GemmDeterminism.*Cuda:GemmRoute*:Timing.Cuda*' > $R/unit.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED" $R/unit.txt | tail -6
echo "== iron test cuda $(el)"
timeout 60 $BIN/iron test --backend cuda -f iron_gemm/decode > $R/test-cuda.txt 2>&1; grep -v "^PASS" $R/test-cuda.txt | tail -4
pack
F=m96_n512,m256_n512,_n96_k5120,_n14336_k4096
for fl in flush-l2 flush-l2-read; do
  echo "== iron bench --$fl $(el)"
  for f in _n14336_k4096 _n96_k5120 _n512_k2048; do
    timeout 60 $BIN/iron bench -f "$f" --backend cuda --dtype bf16 --samples 50 --$fl -v >> $R/bench-$fl.txt 2>&1
  done
  grep -E "iron_gemm/m(1|2|4|8|16|26|49|96|256)_" $R/bench-$fl.txt | cut -c1-120
  echo "== cuBLAS --$fl $(el)"
  timeout 60 python3 $B/bench/peers/gemm_peers.py --out $R/peers-$fl.json --sources cublas --filter $F --samples 50 --$fl \
    > $R/peers-$fl.txt 2>&1
  grep -E "^ok|^FAIL|^ERR" $R/peers-$fl.txt | grep -v m2048 | cut -c1-75
  pack
done
echo "== iron run variants (read flush, 100 samples) $(el)"
v() { echo "-- $*"; timeout 20 $BIN/iron run iron_gemm --backend cuda --dtype bf16 "$@" --samples 100 --flush-l2-read 2>&1 |
      grep -E "^plan|timing|rror" | sed 's/^plan iron_gemm \[bf16\]: //' | cut -c1-150; }
D="--arg n=14336 --arg k=4096 --arg b_trans=1"
{
for m in 1 4; do for ku in 2:1 2:4 1:2 1:4 4:2 4:4; do v --arg m=$m $D --arg ksplit=${ku%:*} --arg unroll=${ku#*:}; done; done
for ku in 2:1 2:4 1:4; do v --arg m=8 $D --arg ksplit=${ku%:*} --arg unroll=${ku#*:}; done
v --arg m=16 $D --arg mma=0 --arg unroll=1
S="--arg n=96 --arg k=5120 --arg b_trans=1"
for m in 26 49; do v --arg m=$m $S --arg unroll=4; done
} > $R/variants.txt 2>&1; cat $R/variants.txt | grep -v "^plan\|decode rows" 
pack
echo "== done $(el)"
