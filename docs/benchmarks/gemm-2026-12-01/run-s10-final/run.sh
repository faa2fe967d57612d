# Session 10, final call (nvidia-h200): main with every session-10 branch merged (dec, fp8, wg, sk,
# the tensor-map store rule). Correctness first (corpus on CUDA and NVIDIA Vulkan, the whole
# conformance suite on CUDA, the fuzzer, the GEMM / warpgroup / tensor-map / fp8 unit rows), then
# the timings with cuBLAS and Triton in the same call: the decode rows under both L2 flush
# protocols and the large bf16 products (the warpgroup kernel, 3 and 4 stages).
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res; mkdir -p $R; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== corpus $(el)"
( timeout 200 $BIN/iron test --backend cuda > $R/test-cuda.txt 2>&1; echo rc=$? >> $R/test-cuda.txt ) &
( timeout 200 $BIN/iron test --backend vulkan > $R/test-vulkan.txt 2>&1; echo rc=$? >> $R/test-vulkan.txt ) &
wait; tail -2 $R/test-cuda.txt; tail -2 $R/test-vulkan.txt; grep -h "^FAIL" $R/test-cuda.txt $R/test-vulkan.txt | cut -c1-200 | head -8; pack
echo "== conformance cuda $(el)"; timeout 90 $BIN/iron conformance --backend cuda > $R/conf-cuda.txt 2>&1; tail -1 $R/conf-cuda.txt; grep "^FAIL" $R/conf-cuda.txt | cut -c1-200 | head -5
echo "== fuzz $(el)"; timeout 60 $BIN/iron fuzz --backends interp,cuda --programs 200 > $R/fuzz.txt 2>&1; tail -1 $R/fuzz.txt; pack
echo "== unit $(el)"; timeout 150 $BIN/iron_unit_tests --gtest_filter='Gemm*:Warpgroup*:Tma*:Mbarrier*:TensorMaps*:TileScale*:Blob*:Timing.Cuda*' > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED  \]|\[  SKIPPED \]" $R/unit.txt | head -12; pack
BF="--backend cuda --dtype bf16"
echo "== decode bench, both flushes $(el)"
for fl in flush-l2-read flush-l2; do
  timeout 60 $BIN/iron bench -f _n14336_k4096 $BF --samples 50 --$fl --json > $R/decode-$fl.jsonl 2>&1
  grep -o '"name":"[^"]*"\|"median_us":[0-9.e+-]*' $R/decode-$fl.jsonl | paste - - | grep -v m2048 | cut -c1-100
  timeout 60 python3 bench/peers/gemm_peers.py --out $R/peers-decode-$fl.json --sources cublas --filter _n14336_k4096 --samples 50 --$fl > $R/peers-decode-$fl.txt 2>&1
  grep -E "^ok|^FAIL" $R/peers-decode-$fl.txt | grep -v m2048 | cut -c1-80
  pack
done
echo "== large, iron first $(el)"
rows() { for f in iron_gemm/m4096_n4096_k4096_wt iron_gemm/m2048_n14336_k4096_wt iron_gemm/m8192_n8192_k8192_wt iron_gemm/m4096_n4096_k4096_wt_wg_s4 iron_gemm/m2048_n14336_k4096_wt_wg_s4; do timeout 60 $BIN/iron bench -f $f $BF --samples 30 --flush-l2 --json 2>&1; done; }
rows > $R/large1.jsonl; grep -o '"name":"[^"]*"\|"median_us":[0-9.e+-]*' $R/large1.jsonl | paste - - | cut -c1-100; pack
echo "== large peers $(el)"; timeout 150 python3 bench/peers/gemm_peers.py --out $R/peers-large.json --samples 30 --flush-l2 --filter m2048_n14336_k4096,m4096_n4096_k4096,m8192 > $R/peers-large.txt 2>&1; grep -E "^ok|FAIL" $R/peers-large.txt | cut -c1-120; pack
echo "== large, iron second $(el)"; rows > $R/large2.jsonl; grep -o '"name":"[^"]*"\|"median_us":[0-9.e+-]*' $R/large2.jsonl | paste - - | cut -c1-100; pack
echo "== done $(el)"
