# Session 13, the fp8 warpgroup GEMM on tensor maps, warp-specialized (nvidia-h200): the fp8
# corpus and unit rows on CUDA first (cuobjdump for the UTMALDG / QGMMA checks), then the
# registers and SASS of the fp8 warpgroup kernels, then the timings: 8192^3 per-tensor and
# block scales, 4096^3 per-tensor, the cp.async warpgroup kernel (tma 0) against the tensor-map
# ones (the default), torch._scaled_mm in the same call (Iron before and after the peers).
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res; mkdir -p $R; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== fp8 corpus cuda $(el)"
timeout 180 $BIN/iron test --backend cuda -f iron_gemm_fp8 > $R/test-cuda.txt 2>&1; echo rc=$? >> $R/test-cuda.txt
tail -2 $R/test-cuda.txt; grep "^FAIL" -A1 $R/test-cuda.txt | cut -c1-250 | head -12; pack
echo "== unit $(el)"; timeout 150 $BIN/iron_unit_tests --gtest_filter='GemmFp8*:GemmMutation.WarpSpecialized*:WarpSpecialize*' > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED  \]|\[  SKIPPED \]" $R/unit.txt | head -12; pack
echo "== fp8 registers and SASS $(el)"
for spec in "iron_gemm_fp8_128x256x128_wg_ws_s4_f8e4m3_bf16 0" "iron_gemm_fp8_128x128x128_wg_ws_s4_f8e4m3_bf16 0" \
            "iron_gemm_fp8_128x128x128_wg_ws_s4_f8e4m3_bf16 1" "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_bf16 0" \
            "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_bf16 1"; do
  set -- $spec; echo "## $1 block=$2"
  $BIN/iron inspect $1 --backend cuda --arch sm_90a --specialize block=$2 > /tmp/k.cu 2>&1
  nvcc -arch=sm_90a -cubin -o /tmp/k.cubin -x cu /tmp/k.cu -Xptxas -v -diag-suppress 177 2>&1 | grep -E "registers|spill|arning"
  cuobjdump -sass /tmp/k.cubin 2>/dev/null | grep -o -E 'QGMMA\.[A-Z0-9x.]+|UTMALDG[A-Z0-9.]*|HMMA\.[A-Z0-9.]+|WARPGROUP\.[A-Z]+|SYNCS\.[A-Z.]+' | sort | uniq -c
done > $R/fp8-resources.txt 2>&1; cat $R/fp8-resources.txt; pack
F8="--backend cuda --warmup 20 --samples 50 --flush-l2 --json"
rows() { for f in m8192_n8192_k8192_tensor m8192_n8192_k8192_tensor_wg m8192_n8192_k8192_block m8192_n8192_k8192_block_wg m4096_n4096_k4096_tensor m4096_n4096_k4096_tensor_wg; do timeout 120 $BIN/iron bench -f "iron_gemm_fp8/$f" $F8 2>&1; done; }
show() { python3 -c "
import json,sys
for l in open(sys.argv[1]):
    try: j=json.loads(l)
    except Exception: continue
    if j.get('bench'):
        s=sorted(j.get('samples_us') or [0]); med=s[len(s)//2]
        print(f\"{j['bench']:30s} {j.get('plan','')[:48]:48s} min {s[0]:8.1f} med {med:8.1f} TF {j['flops']/max(med,1e-9)/1e6:7.1f} regs {(j.get('resources') or {}).get('registers')} {j['correctness']['status']} {j.get('message','')[:100]}\")
" $1; }
echo "== fp8, iron first $(el)"; rows > $R/fp8-1.jsonl; show $R/fp8-1.jsonl; pack
echo "== fp8 peers $(el)"; timeout 150 python3 bench/peers/fp8_peers.py --out $R/fp8-peers.json --samples 50 --flush-l2 > $R/fp8-peers.txt 2>&1; grep -E "^ok|FAIL" $R/fp8-peers.txt | cut -c1-120; pack
echo "== fp8, iron second $(el)"; rows > $R/fp8-2.jsonl; show $R/fp8-2.jsonl; pack
echo "== done $(el)"
