# Session 12, epilogue experiment (nvidia-h200): the warpgroup kernels with the scratch's rows padded
# to BN + 8 floats against cuBLAS, correctness first.
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PYTHONUNBUFFERED=1 PATH=/usr/local/cuda/bin:$PATH
R=/tmp/res; mkdir -p $R; pack() { tar czf $OUT/run.tgz -C $R .; }
timeout 60 $BIN/iron test --backend cuda -f iron_gemm/wg_ > $R/test-cuda.txt 2>&1; tail -1 $R/test-cuda.txt
rows() { for f in m4096_n4096_k4096_wt m2048_n14336_k4096_wt; do timeout 120 $BIN/iron bench -f "iron_gemm/$f" --backend cuda --dtype bf16 --samples 30 --flush-l2 --json 2>&1; done; }
show() { python3 -c "
import json,sys
for l in open(sys.argv[1]):
    try: j=json.loads(l)
    except Exception: continue
    if j.get('bench'):
        s=sorted(j.get('samples_us') or [0]); med=s[len(s)//2]
        print(f\"{j['bench']:28s} {j.get('plan','')[:40]:40s} min {s[0]:8.1f} med {med:8.1f} TF {j['flops']/max(med,1e-9)/1e6:6.1f} regs {(j.get('resources') or {}).get('registers')} {j['correctness']['status']}\")
" $1; }
rows > $R/large1.jsonl; show $R/large1.jsonl; pack
timeout 100 python3 bench/peers/gemm_peers.py --out $R/peers.json --samples 30 --flush-l2 --sources cublas --filter m2048_n14336_k4096,m4096_n4096_k4096 > $R/peers.txt 2>&1; grep -E "^ok|FAIL" $R/peers.txt | cut -c1-90; pack
rows > $R/large2.jsonl; show $R/large2.jsonl; pack
timeout 100 ncu --target-processes all -k regex:iron_gemm_128x256 -c 1 --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum $BIN/iron bench -f iron_gemm/m4096_n4096_k4096_wt_ws --backend cuda --dtype bf16 --samples 1 --warmup 0 > $R/ncu.txt 2>&1; grep -E "l1tex" $R/ncu.txt; pack
