# Session 8, run E (final, after the bulk-store fix): s8-lead with every session-8 branch merged. PART=1 tests, PART=2 benchmarks and peers.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
[ -d .gpu-mb/s8e ] || tar -xJf .gpu-mb/s8e.tar.xz -C .gpu-mb
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
R=$PWD/.gpu-mb/s8e; B=$R/lead/bin; export LD_LIBRARY_PATH=$B
mkdir -p /work/wt/lead; ln -sfn $R/lead/tree/tests /work/wt/lead/tests
cd $R/lead/tree; O=$OUT
if [ "${PART:-1}" = 1 ]; then
( timeout 240 $B/iron test --backend cuda > $O/test-cuda.txt 2>&1; echo rc=$? >> $O/test-cuda.txt ) &
( timeout 240 $B/iron test --backend vulkan > $O/test-vulkan.txt 2>&1; echo rc=$? >> $O/test-vulkan.txt ) &
wait
echo "== corpus"; tail -2 $O/test-cuda.txt; tail -2 $O/test-vulkan.txt; grep -h "^FAIL" $O/test-cuda.txt $O/test-vulkan.txt | head -5
echo "== conformance"; timeout 80 $B/iron conformance --backend cuda > $O/conf-cuda.txt 2>&1; tail -1 $O/conf-cuda.txt; grep -m5 "^FAIL" $O/conf-cuda.txt
timeout 80 $B/iron conformance --backend vulkan > $O/conf-vulkan.txt 2>&1; tail -1 $O/conf-vulkan.txt; grep -m5 "^FAIL" $O/conf-vulkan.txt
echo "== unit"; timeout 200 $B/iron_unit_tests --gtest_filter='Gemm*:Mbarrier*:TensorMaps*:BlobParams*:Backends/StridedViews*:*Sequences*:TgAlias*:TileLayouts*:CodegenTiles*:AsyncCopy*:Blas*:HarnessSampled*:Backends/MemoryArgs*' > $O/unit.txt 2>&1; echo rc=$?; grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED" $O/unit.txt | tail -14
for s in wmma software; do echo "== IRON_CUDA_MMA=$s"; IRON_CUDA_MMA=$s timeout 60 $B/iron test --backend cuda -f iron_gemm > $O/gemm-$s.txt 2>&1; tail -1 $O/gemm-$s.txt; grep -m3 "^FAIL" $O/gemm-$s.txt; done
timeout 100 $B/iron fuzz --backends interp,cuda --programs 300 --seed 401 > $O/fuzz.txt 2>&1; tail -1 $O/fuzz.txt
exit
fi
echo "== mbarrier + software"; timeout 60 $B/iron_unit_tests --gtest_filter='Mbarrier*' > $O/mbar.txt 2>&1; grep -E "^\[  (PASSED|FAILED) |\[  FAILED" $O/mbar.txt
IRON_CUDA_MMA=software timeout 150 $B/iron test --backend cuda -f iron_gemm > $O/gemm-software.txt 2>&1; echo rc=$?; tail -1 $O/gemm-software.txt; grep -m3 "^FAIL" $O/gemm-software.txt
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
echo "== bench"; timeout 200 $B/iron bench -f gemm --backend cuda --dtype bf16 --samples 30 --flush-l2 -v > $O/bench.txt 2>&1; grep -vE "^\s*$" $O/bench.txt | cut -c1-175 | tail -32
echo "== peers"; timeout 150 python3 bench/peers/gemm_peers.py --out $O/gemm-peers.json --samples 30 --flush-l2 --measured-gbps 4270 > $O/peers.txt 2>&1; echo rc=$?; grep -E "^ok|^FAIL|not ok" $O/peers.txt | cut -c1-110
echo "== ncu"; timeout 90 ncu --target-processes all -k regex:iron_gemm -c 1 --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active $B/iron bench -f iron_gemm/m4096_n4096_k4096 --backend cuda --dtype bf16 --samples 1 --warmup 0 > $O/ncu.txt 2>&1; grep -E "^\s+(l1tex|launch|sm__)|  iron_gemm" $O/ncu.txt | head -12
echo "== host"; timeout 60 $B/iron_host_bench --benchmark_filter='Sequence200|Launches200/iron/cuda|Prepared/iron/cuda|Dispatch/raw/cuda' --benchmark_min_time=0.2 --benchmark_repetitions=6 --benchmark_enable_random_interleaving=true --benchmark_out=$O/host-bench.json --benchmark_out_format=json > $O/host-bench.txt 2>&1; grep -E "per kernel|Prepared/iron/cuda_median|Dispatch/raw/cuda_median" $O/host-bench.txt | cut -c1-130
