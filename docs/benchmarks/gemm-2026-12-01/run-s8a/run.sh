# Session 8, run A: s8-lead @ the msl fix (iron_gemm as in s7-gemm) — Iron gemm rows, cuBLAS and Triton peers, host bench.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar -xzf .gpu-mb/s8a.tar.gz -C .gpu-mb
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c LD_LIBRARY_PATH=$PWD/.gpu-mb/s8a
B=.gpu-mb/s8a
mkdir -p /work/wt/lead && ln -sfn $PWD/tests /work/wt/lead/tests
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
echo "== iron gemm rows"; timeout 150 $B/iron bench -f iron_gemm --backend cuda --dtype bf16 --samples 30 --flush-l2 > $OUT/bench-iron.txt 2>&1; grep -vE "^\s*$" $OUT/bench-iron.txt | tail -22
echo "== host bench"; timeout 80 $B/iron_host_bench --benchmark_filter='Prepared/iron/cuda|Dispatch/(iron|raw)/cuda|Sequence200|Launches200/iron/cuda' --benchmark_min_time=0.3 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=$OUT/host-bench.json --benchmark_out_format=json > $OUT/host-bench.txt 2>&1; grep -E "_median|per kernel" $OUT/host-bench.txt | cut -c1-160 | tail -14
echo "== peers cuBLAS + Triton"; time timeout 330 python3 bench/peers/gemm_peers.py --out $OUT/gemm-peers.json --samples 30 --flush-l2 --measured-gbps 4270 > $OUT/peers.txt 2>&1; echo rc=$?; tail -30 $OUT/peers.txt
