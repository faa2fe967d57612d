# Session 12, final call (nvidia-h200): main with the tensor-map, warp-specialized and fp8
# warpgroup kernels and the interpreter's strands merged. Correctness first (the corpus on CUDA
# and NVIDIA Vulkan, conformance on CUDA, the fuzzer, the GEMM / warpgroup / tensor-map / fp8 unit
# rows with cuobjdump for the SASS checks), then the fp8 registers and SASS, then the timings with
# the peers in the same call: fp8 8192^3 against torch._scaled_mm, the large bf16 products
# against cuBLAS and Triton (Iron before and after the peers).
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res; mkdir -p $R; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== corpus $(el)"
( timeout 240 $BIN/iron test --backend cuda > $R/test-cuda.txt 2>&1; echo rc=$? >> $R/test-cuda.txt ) &
( timeout 240 $BIN/iron test --backend vulkan > $R/test-vulkan.txt 2>&1; echo rc=$? >> $R/test-vulkan.txt ) &
wait; tail -2 $R/test-cuda.txt; tail -2 $R/test-vulkan.txt; grep -h "^FAIL" -A1 $R/test-cuda.txt $R/test-vulkan.txt | cut -c1-250 | head -12; pack
echo "== conformance cuda $(el)"; timeout 90 $BIN/iron conformance --backend cuda > $R/conf-cuda.txt 2>&1; tail -1 $R/conf-cuda.txt; grep "^FAIL" $R/conf-cuda.txt | cut -c1-200 | head -5
echo "== fuzz $(el)"; timeout 60 $BIN/iron fuzz --backends interp,cuda --programs 200 > $R/fuzz.txt 2>&1; tail -1 $R/fuzz.txt; pack
echo "== unit $(el)"; timeout 150 $BIN/iron_unit_tests --gtest_filter='Gemm*:Warpgroup*:Tma*:Mbarrier*:TensorMaps*:TileScale*:WarpSpecialize*' > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED  \]|\[  SKIPPED \]" $R/unit.txt | head -12; pack
echo "== fp8 registers and SASS $(el)"
timeout 60 $BIN/iron build -o /tmp/fp8build --emit cuda -f iron_gemm_fp8_128x128x128 --arch sm_90a > $R/fp8-build.txt 2>&1
for f in $(find /tmp/fp8build -name '*.cubin' | sort); do
  echo "## $f"; cuobjdump --dump-resource-usage $f 2>&1 | grep -i -E 'REG|STACK|SHARED' | head -4
  cuobjdump -sass $f 2>/dev/null | grep -o -E 'QGMMA\.[A-Z0-9x.]+|HGMMA\.[A-Z0-9x.]+|HMMA\.[A-Z0-9.]+|F2FP\.[A-Z0-9.]+|WARPGROUP\.[A-Z]+' | sort | uniq -c
done > $R/fp8-resources.txt 2>&1; grep -c "QGMMA" $R/fp8-resources.txt; pack
echo "== fp8 8192^3 $(el)"
timeout 150 $BIN/iron bench -f iron_gemm_fp8 --backend cuda --warmup 20 --samples 50 --flush-l2 --json > $R/fp8-bench.json 2> $R/fp8-bench.txt
tail -8 $R/fp8-bench.txt | cut -c1-220; pack
timeout 90 python3 bench/peers/fp8_peers.py --out $R/fp8-peers.json --samples 50 --flush-l2 > $R/fp8-peers.txt 2>&1; grep -E "^ok|FAIL" $R/fp8-peers.txt | cut -c1-120; pack
BF="--backend cuda --dtype bf16"
rows() { for f in m4096_n4096_k4096_wt m2048_n14336_k4096_wt m8192_n8192_k8192_wt; do timeout 120 $BIN/iron bench -f "iron_gemm/$f" $BF --samples 30 --flush-l2 --json 2>&1; done; }
show() { python3 -c "
import json,sys
for l in open(sys.argv[1]):
    try: j=json.loads(l)
    except Exception: continue
    if j.get('bench'):
        s=sorted(j.get('samples_us') or [0]); med=s[len(s)//2]
        print(f\"{j['bench']:28s} {j.get('plan','')[:40]:40s} min {s[0]:8.1f} med {med:8.1f} TF {j['flops']/max(med,1e-9)/1e6:6.1f} regs {(j.get('resources') or {}).get('registers')} {j['correctness']['status']} {j.get('message','')[:100]}\")
" $1; }
echo "== large, iron first $(el)"; rows > $R/large1.jsonl; show $R/large1.jsonl; pack
echo "== large peers $(el)"; timeout 150 python3 bench/peers/gemm_peers.py --out $R/peers-large.json --samples 30 --flush-l2 --filter m2048_n14336_k4096,m4096_n4096_k4096,m8192 > $R/peers-large.txt 2>&1; grep -E "^ok|FAIL" $R/peers-large.txt | cut -c1-100; pack
echo "== large, iron second $(el)"; rows > $R/large2.jsonl; show $R/large2.jsonl; pack
echo "== done $(el)"
