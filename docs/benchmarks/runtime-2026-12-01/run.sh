# Final validation of this stop on the H200: corpus, conformance, runtime streams/stress/prepared/sequence, HIP absence, iron run on .npy.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c LD_LIBRARY_PATH=$PWD/.gpu-mb/final
B=.gpu-mb/final
mkdir -p /work/wt/lead && ln -sfn $PWD/tests /work/wt/lead/tests
( timeout 150 $B/iron test --backend cuda > $OUT/test-cuda.txt 2>&1; echo rc=$? >> $OUT/test-cuda.txt ) &
( timeout 150 $B/iron test --backend vulkan > $OUT/test-vulkan.txt 2>&1; echo rc=$? >> $OUT/test-vulkan.txt ) &
wait
echo "== corpus"; tail -2 $OUT/test-cuda.txt; tail -2 $OUT/test-vulkan.txt; grep FAIL $OUT/test-cuda.txt $OUT/test-vulkan.txt | head -5
echo "== conformance"; timeout 60 $B/iron conformance --backend cuda > $OUT/conf-cuda.txt 2>&1; tail -2 $OUT/conf-cuda.txt; grep -m5 FAIL $OUT/conf-cuda.txt
timeout 60 $B/iron conformance --backend vulkan > $OUT/conf-vulkan.txt 2>&1; tail -2 $OUT/conf-vulkan.txt; grep -m5 FAIL $OUT/conf-vulkan.txt
echo "== unit (cuda rows)"; timeout 120 $B/iron_unit_tests --gtest_filter='*Streams*:LocatedErrors.*:*Semantics*Cuda*:Hip.TheDevice*' > $OUT/unit.txt 2>&1; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED TEST|tests ran" $OUT/unit.txt | tail -12
echo "== stress 300"; IRON_STRESS_LAUNCHES=300 timeout 150 $B/iron_unit_tests --gtest_filter='Backends/Stress.*' > $OUT/stress.txt 2>&1; grep -E "stress:|PASSED|FAILED|OK \]" $OUT/stress.txt | tail -8
echo "== hip"; timeout 20 $B/iron test --backend hip -f iron_add/n1003 --dtype f32 2>&1 | tail -2
echo "== run npy"; timeout 60 python3 tests/cli/check_run_npy.py $B/iron /tmp/run_npy --backends cuda,vulkan 2>&1 | tail -3
echo "== host bench"; timeout 300 $B/iron_host_bench --benchmark_filter='Dispatch|Prepared|Sequence|Launches200' --benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=$OUT/host-bench.json --benchmark_out_format=json > $OUT/host-bench.txt 2>&1; grep -iE "prepared launch|per kernel|target|_median|replay|rebound|line fit" $OUT/host-bench.txt | tail -30
# Issue 11 item 3's peers, in the same call: the same 200-launch sequence in torch eager and as a
# CUDA graph captured by torch (bench/peers/sequence_peers.py, ~10 s).
echo "== sequence peers"; timeout 120 python3 bench/peers/sequence_peers.py --out $OUT/sequence-peers.json 2>&1 | tail -3
