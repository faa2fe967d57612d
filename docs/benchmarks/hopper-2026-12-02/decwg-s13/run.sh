# Session 13, branch s13-decwg: decode rows on the warpgroup tiles (iron_gemm_decode_wg_tma: W and A
# by tensor-map copies, wgmma m64n16k16) against the older decode bodies and cuBLAS on the H200.
# Run on the device from the lead's checkout as `bash .gpu-mb/decwg.sh` (it sources
# .gpu-mb/setup.sh decwg: this branch's bundled binaries and scripts in $B); OUT = where the raw
# results go. One device call, in this order: the new unit tests (cuobjdump on PATH for the SASS
# check), the decode corpus on CUDA, the new kernel's registers and SASS, then per L2 flush
# protocol (read flush first, then the written one) Iron's decode rows (the default route and
# the older bodies, tma 0), cuBLAS (torch.matmul, bench/peers/gemm_peers.py), Iron's rows again
# (both orders in the same call), and last `iron run` of each row (the plan's reason and timer).
set -u
source .gpu-mb/setup.sh decwg > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ic} IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1
export PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res; mkdir -p $R; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
pack() { tar czf $OUT/run.tgz -C $R .; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee $R/gpu.txt
echo "== unit $(el)"
timeout 120 $BIN/iron_unit_tests --gtest_filter='GemmDeterminism.DecodeRows*:WarpgroupTiles.TheDecodeKernel*:GemmSelector.Decode*:GemmMutation.Decode*' \
  > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED  \]|\[  SKIPPED \]" $R/unit.txt | head -12; pack
echo "== iron test cuda $(el)"
timeout 120 $BIN/iron test --backend cuda -f iron_gemm/decode > $R/test-cuda.txt 2>&1; echo rc=$?
grep -v "^PASS" $R/test-cuda.txt | tail -6; grep "decode_wg" $R/test-cuda.txt | cut -c1-160; pack
echo "== registers and SASS $(el)"
timeout 60 $BIN/iron build -o /tmp/decwgbuild --emit cuda -f iron_gemm_decode_wg_tma --arch sm_90a > $R/build.txt 2>&1
for f in $(find /tmp/decwgbuild -name '*.cubin' | sort); do
  echo "## $f"; cuobjdump --dump-resource-usage $f 2>&1 | grep -i -E 'REG|STACK|SHARED' | head -4
  cuobjdump -sass $f 2>/dev/null | grep -o -E 'HGMMA\.[A-Z0-9x.]+|UTMALDG\.[A-Z0-9.]+|SYNCS\.[A-Z0-9.]+|WARPGROUP\.[A-Z]+' | sort | uniq -c
done > $R/resources.txt 2>&1; cat $R/resources.txt; pack
BF="--backend cuda --dtype bf16"
ROWS="m1 m4 m8 m16"
PEERS=m1_n14336_k4096,m4_n14336_k4096,m8_n14336_k4096,m16_n14336_k4096
# Each row's default route (on the H200: the warpgroup decode kernel) and its _tma0 twin.
rows() { for r in $ROWS; do timeout 60 $BIN/iron bench -f "iron_gemm/${r}_n14336_k4096" $BF --samples 50 --$1 --json 2>&1; done; }
show() { python3 -c "
import json,re,sys
for l in open(sys.argv[1]):
    try: j=json.loads(l)
    except Exception: continue
    if j.get('bench'):
        s=sorted(j.get('samples_us') or [0]); med=s[len(s)//2]
        n,k=(int(x) for x in re.search(r'_n(\d+)_k(\d+)',j['bench']).groups())
        print(f\"{j['bench']:28s} {j.get('plan','')[:44]:44s} min {s[0]:7.2f} med {med:7.2f} us  W {n*k*2/max(med,1e-9)/1e6:5.2f} TB/s  regs {(j.get('resources') or {}).get('registers')} {j['correctness']['status']} {j.get('message','')[:80]}\")
" $1; }
for fl in flush-l2-read flush-l2; do
  echo "== iron first --$fl $(el)"; rows $fl > $R/iron1-$fl.jsonl; show $R/iron1-$fl.jsonl; pack
  echo "== cuBLAS --$fl $(el)"
  timeout 90 python3 bench/peers/gemm_peers.py --out $R/peers-$fl.json --sources cublas --filter $PEERS --samples 50 --$fl \
    > $R/peers-$fl.txt 2>&1
  grep -E "^ok|^FAIL|^ERR" $R/peers-$fl.txt | cut -c1-90; pack
  echo "== iron second --$fl $(el)"; rows $fl > $R/iron2-$fl.jsonl; show $R/iron2-$fl.jsonl; pack
done
echo "== iron run (read flush, 100 samples) $(el)"
v() { echo "-- $*"; timeout 20 $BIN/iron run iron_gemm $BF "$@" --samples 100 --flush-l2-read 2>&1 |
      grep -E "^plan|timing|rror" | sed 's/^plan iron_gemm \[bf16\]: //' | cut -c1-220; }
D="--arg n=14336 --arg k=4096 --arg b_trans=1"
{
for m in 1 4 8 16; do v --arg m=$m $D; v --arg m=$m $D --arg tma=0; done
} > $R/variants.txt 2>&1; cat $R/variants.txt
pack
echo "== done $(el)"
