# Session 8, run F: issue 11's targets in one call on main 39b7273 (binaries of s8e): prepared vs raw, the
# 200-kernel sequence, torch eager and torch CUDA graph of the same sequence, and the stress suite at 300 launches.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
[ -d .gpu-mb/s8e ] || tar -xJf .gpu-mb/s8e.tar.xz -C .gpu-mb
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
R=$PWD/.gpu-mb/s8e; B=$R/lead/bin
mkdir -p /work/wt/lead; ln -sfn $R/lead/tree/tests /work/wt/lead/tests
O=$OUT
echo "== host bench (12 repetitions, interleaved)"; LD_LIBRARY_PATH=$B timeout 100 $B/iron_host_bench --benchmark_filter='Prepared/iron/cuda|Dispatch/raw/cuda|Sequence200|Launches200/iron/cuda' --benchmark_min_time=0.2 --benchmark_repetitions=12 --benchmark_enable_random_interleaving=true --benchmark_out=$O/host-bench.json --benchmark_out_format=json > $O/host-bench.txt 2>&1; grep -E "per kernel|Prepared/iron/cuda_median|Dispatch/raw/cuda_median|Sequence200/iron/cuda_median" $O/host-bench.txt | cut -c1-130
echo "== sequence peers (torch eager, torch CUDA graph)"; timeout 90 python3 bench/peers/sequence_peers.py --out $O/sequence-peers.json > $O/sequence-peers.txt 2>&1; tail -4 $O/sequence-peers.txt
echo "== stress 300"; IRON_STRESS_LAUNCHES=300 LD_LIBRARY_PATH=$B timeout 150 $B/iron_unit_tests --gtest_filter='Backends/Stress.*' > $O/stress.txt 2>&1; echo rc=$?; grep -E "stress:|PASSED|FAILED" $O/stress.txt | cut -c1-200 | tail -8
