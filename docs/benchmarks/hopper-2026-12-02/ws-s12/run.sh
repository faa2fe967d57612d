# Session 12, second call (nvidia-h200): the warp-specialized 128x256 kernel (iron_gemm_128x256x64_wg_ws_s4)
# against the tensor-map kernel it specializes and cuBLAS / Triton, in one call. Correctness first.
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res; mkdir -p $R; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== wg corpus cuda $(el)"
timeout 100 $BIN/iron test --backend cuda -f iron_gemm/wg_ > $R/test-cuda.txt 2>&1; echo rc=$? >> $R/test-cuda.txt
tail -2 $R/test-cuda.txt; grep -h "^FAIL" -A2 $R/test-cuda.txt | cut -c1-300 | head -8; pack
echo "== unit $(el)"; timeout 100 $BIN/iron_unit_tests --gtest_filter='WarpgroupTiles.TheTensorMap*:WarpgroupTiles.TheGemm*:GemmSelector*' > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED  \]|Skipped" $R/unit.txt | head -12; pack
BF="--backend cuda --dtype bf16"
# Each filter runs the shape's four weight rows: _wt (the default: tensor maps, 128x256), _wt_ws,
# _wt_tma1 (128x128) and _wt_wg_s4 (per-thread cp.async) where they exist.
rows() { for f in m4096_n4096_k4096_wt m2048_n14336_k4096_wt m8192_n8192_k8192_wt; do timeout 90 $BIN/iron bench -f "iron_gemm/$f" $BF --samples 30 --flush-l2 --json 2>&1; done; }
show() { python3 -c "
import json,sys
for l in open(sys.argv[1]):
    try: j=json.loads(l)
    except Exception: continue
    if j.get('bench'):
        s=sorted(j.get('samples_us') or [0]); med=s[len(s)//2]
        print(f\"{j['bench']:28s} {j.get('plan','')[:40]:40s} min {s[0]:8.1f} med {med:8.1f} TF {j['flops']/max(med,1e-9)/1e6:6.1f} regs {(j.get('resources') or {}).get('registers')} {j['correctness']['status']} {j.get('message','')[:120]}\")
" $1; }
echo "== large, iron first $(el)"; rows > $R/large1.jsonl; show $R/large1.jsonl; pack
echo "== large peers $(el)"; timeout 150 python3 bench/peers/gemm_peers.py --out $R/peers-large.json --samples 30 --flush-l2 --filter m2048_n14336_k4096,m4096_n4096_k4096,m8192 > $R/peers-large.txt 2>&1; grep -E "^ok|FAIL" $R/peers-large.txt | cut -c1-100; pack
echo "== large, iron second $(el)"; rows > $R/large2.jsonl; show $R/large2.jsonl; pack
echo "== done $(el)"
