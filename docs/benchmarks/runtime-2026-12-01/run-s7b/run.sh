# Session 7, run B: issue 10 re-check (conformance), issue 11 (memory, sequences, stress, host bench, torch sequence peers, Python).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar -xzf .gpu-mb/s7b.tar.gz -C .gpu-mb
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c LD_LIBRARY_PATH=$PWD/.gpu-mb/s7b
B=.gpu-mb/s7b
mkdir -p /work/wt/lead && ln -sfn $PWD/tests /work/wt/lead/tests
( timeout 200 $B/iron test --backend cuda > $OUT/test-cuda.txt 2>&1; echo rc=$? >> $OUT/test-cuda.txt ) &
( timeout 200 $B/iron test --backend vulkan > $OUT/test-vulkan.txt 2>&1; echo rc=$? >> $OUT/test-vulkan.txt ) &
wait
echo "== corpus"; tail -2 $OUT/test-cuda.txt; tail -2 $OUT/test-vulkan.txt; grep FAIL $OUT/test-cuda.txt $OUT/test-vulkan.txt | head -5
echo "== conformance"; timeout 90 $B/iron conformance --backend cuda > $OUT/conf-cuda.txt 2>&1; tail -1 $OUT/conf-cuda.txt; grep -m5 FAIL $OUT/conf-cuda.txt
timeout 90 $B/iron conformance --backend vulkan > $OUT/conf-vulkan.txt 2>&1; tail -1 $OUT/conf-vulkan.txt; grep -m5 FAIL $OUT/conf-vulkan.txt
echo "== unit (runtime rows)"; timeout 200 $B/iron_unit_tests --gtest_filter='*Streams*:*Sequences*:*Memory*:*Collectives*:*WrapStream*:*Pool*:*Prepared*' > $OUT/unit.txt 2>&1; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED TEST|tests ran|\[  FAILED" $OUT/unit.txt | tail -14
echo "== stress 300"; IRON_STRESS_LAUNCHES=300 timeout 150 $B/iron_unit_tests --gtest_filter='Backends/Stress.*' > $OUT/stress.txt 2>&1; grep -E "stress:|PASSED|FAILED" $OUT/stress.txt | tail -8
echo "== host bench"; timeout 200 $B/iron_host_bench --benchmark_filter='Dispatch|Prepared|Sequence|Launches200' --benchmark_min_time=0.3 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=$OUT/host-bench.json --benchmark_out_format=json > $OUT/host-bench.txt 2>&1; grep -E "_median" $OUT/host-bench.txt | cut -c1-150 | tail -24
echo "== sequence peers"; timeout 90 python3 bench/peers/sequence_peers.py --out $OUT/sequence-peers.json 2>&1 | tail -3
echo "== python"; mkdir -p .gpu && cp $B/iron $B/iron-runner $B/libiron_c.so .gpu/ && timeout 150 bash scripts/python-gpu.sh > $OUT/python.txt 2>&1; grep -E "passed|failed|error|python-gpu:|overhead|PASS|FAIL" $OUT/python.txt | tail -14
