# Session 7, run C: the merged main (graph PDL edges in every CUDA kernel's prologue, IRON_CUDA_DEVICE, blas) on the H200.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar -xzf .gpu-mb/s7c.tar.gz -C .gpu-mb
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c LD_LIBRARY_PATH=$PWD/.gpu-mb/s7c
B=.gpu-mb/s7c
mkdir -p /work/wt/lead && ln -sfn $PWD/tests /work/wt/lead/tests
( timeout 200 $B/iron test --backend cuda > $OUT/test-cuda.txt 2>&1; echo rc=$? >> $OUT/test-cuda.txt ) &
( timeout 200 $B/iron test --backend vulkan > $OUT/test-vulkan.txt 2>&1; echo rc=$? >> $OUT/test-vulkan.txt ) &
wait
echo "== corpus"; tail -2 $OUT/test-cuda.txt; tail -2 $OUT/test-vulkan.txt; grep FAIL $OUT/test-cuda.txt $OUT/test-vulkan.txt | head -5
echo "== conformance"; timeout 60 $B/iron conformance --backend cuda > $OUT/conf-cuda.txt 2>&1; tail -1 $OUT/conf-cuda.txt; grep -m5 FAIL $OUT/conf-cuda.txt
timeout 60 $B/iron conformance --backend vulkan > $OUT/conf-vulkan.txt 2>&1; tail -1 $OUT/conf-vulkan.txt; grep -m5 FAIL $OUT/conf-vulkan.txt
echo "== unit"; timeout 150 $B/iron_unit_tests --gtest_filter='*Sequences*:*Memory*:*Collectives*:Blas*:HarnessSampled*' > $OUT/unit.txt 2>&1; grep -E "^m=|^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED" $OUT/unit.txt | tail -22
echo "== stress 300 (vulkan, cuda)"; IRON_STRESS_LAUNCHES=300 timeout 100 $B/iron_unit_tests --gtest_filter='Backends/Stress.*/vulkan:Backends/Stress.*/cuda' > $OUT/stress.txt 2>&1; grep -E "stress:|PASSED|FAILED" $OUT/stress.txt | cut -c1-220 | tail -5
echo "== host bench"; timeout 90 $B/iron_host_bench --benchmark_filter='Prepared/iron/cuda|Dispatch/(iron|raw)/cuda|Sequence200|SequenceReplay200|Launches200/iron/cuda' --benchmark_min_time=0.3 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=$OUT/host-bench.json --benchmark_out_format=json > $OUT/host-bench.txt 2>&1; grep -E "_median|per kernel|target" $OUT/host-bench.txt | cut -c1-160 | tail -24
echo "== cublaslt rows"; timeout 100 $B/iron bench -f cublaslt_gemm --backend cuda --dtype bf16 --samples 30 --flush-l2 > $OUT/cublaslt.txt 2>&1; tail -16 $OUT/cublaslt.txt
echo "== gemm peers"; timeout 120 python3 bench/peers/gemm_peers.py --out $OUT/gemm-peers.json --samples 30 --flush-l2 --measured-gbps 4270 --sources cublas > $OUT/peers.txt 2>&1; tail -16 $OUT/peers.txt
