# Session 10, warpgroup GEMM (branch s10-wg): correctness on the H200 (the wgmma conformance cases,
# the WarpgroupTiles / Gemm unit tests, iron_gemm's cases), then iron_gemm's warpgroup kernel
# beside the mma.sync kernel, cuBLAS (torch.matmul) and Triton in the same call, then ptxas and
# the SASS of the kernel.
set -u
source .gpu-mb/setup.sh wg
export XDG_CACHE_HOME=/tmp/ic PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
cd $B
R=/tmp/res; mkdir -p $R
pack() { tar czf $OUT/run.tgz -C $R . ; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee $R/gpu.txt
echo "== conformance (cuda)"; timeout 60 iron conformance --backend cuda -f tile_wg_mma > $R/conf.txt 2>&1; echo "rc=$?" | tee -a $R/conf.txt; tail -2 $R/conf.txt
echo "== unit"; timeout 100 bin/iron_unit_tests --gtest_filter='WarpgroupTiles*:GemmSelector*:GemmMutation.Warp*:GemmCodegen*' > $R/unit.txt 2>&1; echo "rc=$?" | tee -a $R/unit.txt; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $R/unit.txt | head -12
echo "== iron test cuda iron_gemm"; timeout 120 iron test --backend cuda -f iron_gemm > $R/test.txt 2>&1; echo "rc=$?" | tee -a $R/test.txt; tail -2 $R/test.txt; grep -m5 "^FAIL" $R/test.txt
pack
BF="--backend cuda --dtype bf16 --samples 30 --flush-l2"
rows() { for f in iron_gemm/m4096_n4096_k4096_wt iron_gemm/m2048_n14336_k4096_wt iron_gemm/m8192_n8192_k8192_wt iron_gemm/m4096_n4096_k4096 iron_gemm/m2048_n14336_k4096; do timeout 60 iron bench -f $f $BF --json 2>&1; done; }
echo "== iron, first (wt rows: the warpgroup kernel; row-major rows: the mma.sync kernel)"; rows > $R/iron1.jsonl; grep -o '"name":"[^"]*"\|"median_us":[0-9.e+-]*\|"min_us":[0-9.e+-]*\|"status":"[a-z]*"' $R/iron1.jsonl | tr '\n' ' ' | head -c 2500; echo; pack
echo "== peers"; timeout 150 python3 bench/peers/gemm_peers.py --out $R/gemm-peers.json --samples 30 --flush-l2 --filter m2048_n14336_k4096,m4096_n4096_k4096,m8192 > $R/peers.txt 2>&1; echo rc=$?; grep -E "^ok|FAIL|not ok" $R/peers.txt | cut -c1-160; pack
echo "== ptxas + sass"
timeout 60 iron inspect iron_gemm_128x128x64_wg_s3_bf16 --backend cuda --dtype bf16 --threadgroup 256 --specialize b_col=1 --specialize full=1 --specialize epi=0 > $R/wg.cu 2>&1
timeout 90 nvcc -arch=sm_90a -cubin -Xptxas -v -o $R/wg.cubin $R/wg.cu > $R/ptxas.txt 2>&1; grep -E "C75|registers|spill" $R/ptxas.txt
cuobjdump -sass $R/wg.cubin > $R/wg.sass 2>&1; grep -c HGMMA $R/wg.sass; grep -m4 HGMMA $R/wg.sass; rm -f $R/wg.cubin; pack
echo "== iron, second"; rows > $R/iron2.jsonl; grep -o '"name":"[^"]*"\|"median_us":[0-9.e+-]*\|"status":"[a-z]*"' $R/iron2.jsonl | tr '\n' ' ' | head -c 1500; echo; pack
