# Session 8, run C: s8-lead cf9d768 (views merged), swz 08adb04, dec d9ba1be. PART=dec for the dec branch.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
[ -d .gpu-mb/s8c ] || tar -xJf .gpu-mb/s8c.tar.xz -C .gpu-mb
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
R=$PWD/.gpu-mb/s8c
for n in lead swz dec; do mkdir -p /work/wt/$n; ln -sfn $R/$n/tree/tests /work/wt/$n/tests; done
if [ "${PART:-}" = dec ]; then
  mkdir -p $OUT/dec; cd $R/dec/tree; B=$R/dec/bin U=$R/dec/bin OUT=$OUT/dec timeout 560 bash docs/benchmarks/gemm-2026-12-01/decode-h200/run.sh; exit
fi
mkdir -p $OUT/lead $OUT/swz
echo "######## lead (views)"; cd $R/lead/tree; B=$R/lead/bin; O=$OUT/lead; export LD_LIBRARY_PATH=$B
timeout 120 $B/iron_unit_tests --gtest_filter='TensorMaps.*:BlobParams.*:Backends/StridedViews.*:StridedViewBounds.*:Backends/MemoryArgs.*:Backends/Sequences.*:VulkanSequences.*' > $O/views-unit.txt 2>&1; echo rc=$?; grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED|Failure" $O/views-unit.txt | tail -12
IRON_CUDA_GRAPH=nodes timeout 60 $B/iron_unit_tests --gtest_filter='Backends/Sequences.*/cuda' > $O/views-nodes.txt 2>&1; echo rc=$?; grep -E "^\[  (PASSED|FAILED) |\[  FAILED" $O/views-nodes.txt | tail -4
vulkaninfo 2>/dev/null | grep -i 'descriptorBindingStorageBufferUpdateAfterBind\|deviceName' | head -4
for p in 1 2; do timeout 60 $B/iron_host_bench --benchmark_filter='Prepared/iron/cuda|Dispatch/raw/cuda' --benchmark_min_time=0.2 --benchmark_repetitions=12 --benchmark_enable_random_interleaving=true --benchmark_out=$O/prepared-$p.json --benchmark_out_format=json > $O/prepared-$p.txt 2>&1; grep -E "_median|_mean|_stddev" $O/prepared-$p.txt | cut -c1-90; done
unset LD_LIBRARY_PATH
echo "######## swz"; cd $R/swz/tree; B=$R/swz/bin; T=$R/swz/bin; O=$OUT/swz
timeout 150 $T/iron_unit_tests --gtest_filter='Gemm*:TileLayouts*:CodegenTiles*:AsyncCopy*' > $O/unit.txt 2>&1; echo rc=$?; grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED" $O/unit.txt | tail -8
for s in mma wmma software; do echo "== $s"; IRON_CUDA_MMA=$s timeout 100 $B/iron test --backend cuda -f iron_gemm > $O/test-$s.txt 2>&1; grep -v "^PASS" $O/test-$s.txt | tail -4; done
echo "== vulkan"; timeout 100 $B/iron test --backend vulkan -f iron_gemm > $O/test-vulkan.txt 2>&1; grep -v "^PASS" $O/test-vulkan.txt | tail -4
timeout 120 $B/iron bench -f iron_gemm --backend cuda --dtype bf16 --samples 30 --flush-l2 -v > $O/bench.txt 2>&1; grep -vE "^\s*$" $O/bench.txt | tail -18
timeout 100 ncu --target-processes all -k regex:iron_gemm -c 1 --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum --section WarpStateStats $B/iron bench -f iron_gemm/m4096_n4096_k4096 --backend cuda --dtype bf16 --samples 1 --warmup 0 > $O/ncu.txt 2>&1; grep -E "^\s+(l1tex|launch|sm__|smsp)|Warp Cycles Per Issued|==PROF==|Kernel|iron_gemm" $O/ncu.txt | head -16
timeout 120 python3 bench/peers/gemm_peers.py --out $O/gemm-peers.json --samples 30 --flush-l2 --measured-gbps 4270 > $O/peers.txt 2>&1; grep -E "m4096|m2048|m8192" $O/peers.txt
