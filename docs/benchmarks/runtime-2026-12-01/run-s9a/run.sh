# Session 9, run A (nvidia-h200-x2): issue 11 in one call on main befb25f's binaries: NCCL on two GPUs,
# prepared vs raw launches, the 200-kernel sequence against torch eager and torch's CUDA graph (two
# processes each, peers before and after), the stress suite at 300 launches, and the Python package on torch.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bash .gpu-mb/setup.sh main
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
B=/tmp/b/main/bin; O=/tmp/o; mkdir -p $O; pack() { tar -C $O -czf $OUT/run.tgz . ; }
nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -4
echo "== NCCL: Collectives tests"; LD_LIBRARY_PATH=$B timeout 120 $B/iron_unit_tests --gtest_filter='Collectives.*' > $O/collectives.txt 2>&1; echo rc=$?; grep -E "^\[  |NCCL|nccl" $O/collectives.txt | cut -c1-200 | tail -12; pack
echo "== NCCL: bench"; timeout 120 $B/iron_collective_bench --json $O/collective-bench.json 2>&1 | tail -30; pack
H="--benchmark_filter=Prepared/iron/cuda|Dispatch/raw/cuda|Sequence200/iron/cuda|Sequence200/raw_graph/cuda --benchmark_min_time=0.2 --benchmark_repetitions=6 --benchmark_enable_random_interleaving=true --benchmark_out_format=json"
echo "== sequence peers, first"; timeout 90 python3 bench/peers/sequence_peers.py --out $O/sequence-peers-1.json > $O/seqpeers.txt 2>&1; tail -3 $O/seqpeers.txt; pack
for p in 1 2; do echo "== host bench process $p"; LD_LIBRARY_PATH=$B timeout 120 $B/iron_host_bench $H --benchmark_out=$O/host-bench-$p.json > $O/hb$p.txt 2>&1; echo rc=$?; grep -E "_median|_min|per kernel" $O/hb$p.txt | cut -c1-150; done
echo "== sequence peers, second"; timeout 90 python3 bench/peers/sequence_peers.py --out $O/sequence-peers-2.json >> $O/seqpeers.txt 2>&1; tail -3 $O/seqpeers.txt; pack
echo "== stress 300 (cuda, vulkan)"; IRON_STRESS_LAUNCHES=300 LD_LIBRARY_PATH=$B timeout 120 $B/iron_unit_tests --gtest_filter='Backends/Stress.*/cuda:Backends/Stress.*/vulkan' > $O/stress.txt 2>&1; echo rc=$?; grep -E "stress:|OK|FAILED" $O/stress.txt | cut -c1-230; pack
echo "== python on torch"; mkdir -p .gpu && cp $B/iron $B/iron-runner $B/libiron_c.so .gpu/ && OUT=$O timeout 120 bash scripts/python-gpu.sh > /dev/null 2>&1; echo rc=$?; grep -E "passed|failed|exit|error" $O/python-gpu.log | tail -5; pack
echo "== stress 300 (interp)"; IRON_STRESS_LAUNCHES=300 LD_LIBRARY_PATH=$B timeout 200 $B/iron_unit_tests --gtest_filter='Backends/Stress.*/interp' >> $O/stress.txt 2>&1; echo rc=$?; grep -E "stress:|OK|FAILED" $O/stress.txt | cut -c1-230 | tail -3; pack
