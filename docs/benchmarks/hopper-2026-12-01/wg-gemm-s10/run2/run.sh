# Session 10, warpgroup GEMM run 2: the 4-stage pipeline (one step's products in flight across the
# next step's staging, wg_wait(1)) against the 3-stage kernel (wg_wait(0)), same call, alternating.
set -u
source .gpu-mb/setup.sh wg
export XDG_CACHE_HOME=/tmp/ic PATH=/usr/local/cuda/bin:$PATH
cd $B
R=/tmp/res; mkdir -p $R
pack() { tar czf $OUT/run.tgz -C $R . ; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee $R/gpu.txt
echo "== iron test cuda iron_gemm/wg_"; timeout 60 iron test --backend cuda -f iron_gemm/wg_ > $R/test.txt 2>&1; echo "rc=$?" | tee -a $R/test.txt; grep -E "^(PASS|FAIL)" $R/test.txt | cut -c1-100
BF="--backend cuda --dtype bf16 --samples 30 --flush-l2 --json"
for pass in 1 2; do
  for f in m4096_n4096_k4096_wt m2048_n14336_k4096_wt m8192_n8192_k8192_wt; do
    timeout 60 iron bench -f iron_gemm/$f $BF > $R/s3-$f-$pass.jsonl 2>&1
    timeout 60 iron bench -f iron_gemm/$f $BF --kernel-override iron_gemm_128x128x64_wg_stages_s4_bf16 > $R/s4-$f-$pass.jsonl 2>&1
  done
  cat $R/s3-*-$pass.jsonl > $R/s3-pass$pass.jsonl; cat $R/s4-*-$pass.jsonl > $R/s4-pass$pass.jsonl; rm -f $R/s3-m* $R/s4-m*
  grep -o '"bench":"[^"]*"\|"plan":"[^"]*"\|"status":"[a-z]*"' $R/s3-pass$pass.jsonl $R/s4-pass$pass.jsonl | tr '\n' ' ' | head -c 1500; echo; pack
done
