# Session 7, run G: the iron_gemm family (branch s7-gemm @ dc05091) on the H200.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar -xzf .gpu-mb/s7g.tar.gz -C .gpu-mb
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
B=.gpu-mb/s7g
mkdir -p /work/wt/gemm && ln -sfn $PWD/tests /work/wt/gemm/tests
timeout 150 $B/iron_unit_tests --gtest_filter='Gemm*:AsyncCopy*:CodegenTiles*' > $OUT/gemm-unit.txt 2>&1; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED TEST|\[  FAILED" $OUT/gemm-unit.txt | tail -12
for s in mma wmma software; do echo "== IRON_CUDA_MMA=$s"; IRON_CUDA_MMA=$s timeout 120 $B/iron test --backend cuda -f iron_gemm > $OUT/test-$s.txt 2>&1; grep -v "^PASS" $OUT/test-$s.txt | tail -4; done
echo "== vulkan"; timeout 120 $B/iron test --backend vulkan -f iron_gemm 2>&1 | grep -v "^PASS" | tail -4
timeout 60 $B/iron conformance --backend cuda -f async_copy 2>&1 | tail -1
timeout 60 $B/iron conformance --backend vulkan -f async_copy 2>&1 | tail -1
echo "== bench"; timeout 200 $B/iron bench -f iron_gemm --backend cuda --dtype bf16 --samples 30 --flush-l2 -v > $OUT/bench.txt 2>&1; grep -vE "^\s*$" $OUT/bench.txt | tail -45
which ncu && timeout 100 ncu --target-processes all -k regex:iron_gemm -c 1 --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic $B/iron bench -f iron_gemm/m4096_n4096_k4096 --backend cuda --dtype bf16 --samples 1 --warmup 0 > $OUT/ncu.txt 2>&1; tail -25 $OUT/ncu.txt
