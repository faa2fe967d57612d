# Session 12 (nvidia-h200): the tensor-map warpgroup kernels (iron_gemm_128x{128,256}x64_wg_tma).
# Correctness on CUDA first (the GEMM corpus, the tensor-map / warpgroup unit rows), then the
# large bf16 products: Iron (every tensor-map variant and the per-thread-copy kernel), cuBLAS and
# Triton (gemm_peers.py), Iron again (the second order).
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res; mkdir -p $R; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== gemm corpus cuda $(el)"
timeout 150 $BIN/iron test --backend cuda -f iron_gemm > $R/test-cuda.txt 2>&1; echo rc=$? >> $R/test-cuda.txt
tail -2 $R/test-cuda.txt; grep -h "^FAIL" $R/test-cuda.txt | cut -c1-220 | head -8; grep -h "wg_tma" $R/test-cuda.txt | cut -c1-120 | head; pack
echo "== unit $(el)"; timeout 120 $BIN/iron_unit_tests --gtest_filter='Gemm*:Warpgroup*:Tma*:Mbarrier*:TensorMaps*' > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED  \]" $R/unit.txt | head -12; pack
BF="--backend cuda --dtype bf16"
rows() { for f in m4096_n4096_k4096_wt m4096_n4096_k4096_wt_tma1 m4096_n4096_k4096_wt_tma2_s3 m4096_n4096_k4096_wt_wg_s4 m2048_n14336_k4096_wt m2048_n14336_k4096_wt_tma1 m2048_n14336_k4096_wt_tma2_s3 m8192_n8192_k8192_wt m8192_n8192_k8192_wt_tma1 m8192_n8192_k8192_wt_tma2_s3; do timeout 60 $BIN/iron bench -f iron_gemm/$f $BF --samples 30 --flush-l2 --json 2>&1; done; }
show() { grep -o '"name":"[^"]*"\|"median_us":[0-9.e+-]*\|"min_us":[0-9.e+-]*\|"tflops":[0-9.e+-]*\|"error":"[^"]*"' $1 | paste -s -d' ' | sed 's/"name"/\n"name"/g' | cut -c1-200; }
echo "== large, iron first $(el)"; rows > $R/large1.jsonl; show $R/large1.jsonl; pack
echo "== large peers $(el)"; timeout 150 python3 bench/peers/gemm_peers.py --out $R/peers-large.json --samples 30 --flush-l2 --filter m2048_n14336_k4096,m4096_n4096_k4096,m8192 > $R/peers-large.txt 2>&1; grep -E "^ok|FAIL" $R/peers-large.txt | cut -c1-120; pack
echo "== large, iron second $(el)"; rows > $R/large2.jsonl; show $R/large2.jsonl; pack
echo "== done $(el)"
