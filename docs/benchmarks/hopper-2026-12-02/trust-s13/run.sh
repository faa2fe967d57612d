# Session 13, closing trust call: the merged tree on NVIDIA Vulkan and CUDA (corpus, fuzz,
# sampled mutation on CUDA, every CUDA-parametrized unit test), then the decode m = 1 / 2 rows.
set -u
source .gpu-mb/setup.sh s13 > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res-t; mkdir -p $R; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/trust.tgz -C $R .; }
echo "== corpus cuda + vulkan $(el)"
( timeout 200 $BIN/iron test --backend cuda > $R/test-cuda.txt 2>&1; echo rc=$? >> $R/test-cuda.txt ) &
( timeout 200 $BIN/iron test --backend vulkan > $R/test-vulkan.txt 2>&1; echo rc=$? >> $R/test-vulkan.txt ) &
wait; tail -2 $R/test-cuda.txt; tail -2 $R/test-vulkan.txt; grep -h "^FAIL" -A1 $R/test-cuda.txt $R/test-vulkan.txt | cut -c1-250 | head -12; pack
echo "== fuzz $(el)"
( timeout 100 $BIN/iron fuzz --backends interp,cuda --programs 500 > $R/fuzz-cuda.txt 2>&1 ) &
( timeout 100 $BIN/iron fuzz --backends interp,vulkan --programs 500 > $R/fuzz-vulkan.txt 2>&1 ) &
wait; tail -1 $R/fuzz-cuda.txt; tail -1 $R/fuzz-vulkan.txt; pack
echo "== unit (cuda) $(el)"
timeout 200 $BIN/iron_unit_tests --gtest_filter='*cuda*:*Cuda*:Gemm*:Warpgroup*:WarpSpecialize*' > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED) |\[  FAILED  \]" $R/unit.txt | head -12; grep -c "^\[  SKIPPED \]" $R/unit.txt; pack
echo "== mutate cuda (every 10th, GEMM left out) $(el)"
timeout 120 $BIN/iron test --mutate --backend cuda --mutate-every 10 --mutate-skip iron_gemm > $R/mutate-cuda.txt 2>&1; echo rc=$?; tail -1 $R/mutate-cuda.txt; grep "^SURVIVED" $R/mutate-cuda.txt | head -5; pack
echo "== decode m = 1, 2 $(el)"
v() { echo "-- $*"; timeout 20 $BIN/iron run iron_gemm --backend cuda --dtype bf16 "$@" --samples 100 --flush-l2-read 2>&1 | grep -E "^plan|timing|rror" | sed 's/^plan iron_gemm \[bf16\]: //' | cut -c1-160; }
D="--arg n=14336 --arg k=4096 --arg b_trans=1"
{ for m in 1 2; do v --arg m=$m $D; v --arg m=$m $D --arg tma=1; v --arg m=$m $D --arg tma=0; done; } > $R/decode-m12.txt 2>&1; cat $R/decode-m12.txt; pack
echo "== done $(el)"
