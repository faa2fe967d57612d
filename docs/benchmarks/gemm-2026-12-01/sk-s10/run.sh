# Session 10, branch s10-sk: one-launch split-K on the H200. Run on the device from the lead's
# checkout as `bash .gpu-mb/sk.sh` (it sources .gpu-mb/setup.sh sk: this branch's bundled binaries
# and scripts in $B); OUT = where the raw results go. One device call, in this order: correctness
# (unit tests), then under each L2 flush protocol
# (--flush-l2, a written flush; --flush-l2-read, a read flush): `iron bench` of the six small
# shapes (the selector's route, output checked against the oracle first), `iron run` of the three
# split-K shapes with sk 0 (two launches) then sk 1 (one launch), and cuBLAS through
# torch.matmul (bench/peers/gemm_peers.py) in the same call; last, `iron test --backend cuda -f
# iron_gemm` in the time left.
set -u
source .gpu-mb/setup.sh sk > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ic} IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1
R=/tmp/res; mkdir -p $R
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== unit $(el)"
timeout 90 $BIN/iron_unit_tests --gtest_filter='GemmDeterminism.*Cuda:GemmSplitK.*Cuda:GemmRoute*:GemmSelector*' > $R/unit.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED" $R/unit.txt | tail -8
pack
F=m96_n512,m256_n512,_n96_k5120
for fl in flush-l2 flush-l2-read; do
  echo "== iron bench --$fl $(el)"
  for f in _n96_k5120 _n512_k2048; do
    timeout 40 $BIN/iron bench -f "$f" --backend cuda --dtype bf16 --samples 50 --$fl -v >> $R/bench-$fl.txt 2>&1
  done
  grep -E "iron_gemm/m(1|26|49|96|256)_" $R/bench-$fl.txt | cut -c1-120
  echo "== iron run sk 0 / 1 --$fl $(el)"
  for shape in "96 512 2048" "256 512 2048" "256 96 5120"; do
    set -- $shape
    for sk in 0 1; do
      echo "-- m=$1 n=$2 k=$3 sk=$sk"
      timeout 20 $BIN/iron run iron_gemm --backend cuda --dtype bf16 --arg m=$1 --arg n=$2 --arg k=$3 --arg b_trans=1 \
        --arg sk=$sk --samples 50 --$fl 2>&1 | grep -E "^plan|timing|rror" | cut -c1-220
    done
  done > $R/run-$fl.txt 2>&1; grep -E "^--|timing" $R/run-$fl.txt | cut -c1-120
  echo "== cuBLAS --$fl $(el)"
  timeout 45 python3 $B/bench/peers/gemm_peers.py --out $R/peers-$fl.json --sources cublas --filter $F --samples 50 --$fl \
    > $R/peers-$fl.txt 2>&1
  grep -E "^ok|^FAIL|^ERR" $R/peers-$fl.txt | cut -c1-75
  pack
done
echo "== iron test cuda $(el)"
# Whatever is left of the call's ~170 s goes to the whole family's corpus on CUDA.
left=$(( 170 - ($(date +%s) - t0) )); [ $left -lt 10 ] && left=10
timeout $left $BIN/iron test --backend cuda -f iron_gemm > $R/test-cuda.txt 2>&1; echo "rc $?"; grep -v "^PASS" $R/test-cuda.txt | tail -6
pack
echo "== done $(el)"
