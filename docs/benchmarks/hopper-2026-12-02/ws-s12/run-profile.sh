# Session 12, profile call (nvidia-h200): Nsight Compute on the warp-specialized and two-warpgroup
# 128x256 kernels at 4096^3 (one launch each after the bench's oracle check): speed of light,
# the compute pipes, warp stall reasons and shared-memory bank conflicts, to say where the last
# percent against cuBLAS goes.
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PATH=/usr/local/cuda/bin:$PATH
R=/tmp/res; mkdir -p $R; pack() { tar czf $OUT/run.tgz -C $R .; }
which ncu || exit 3
for row in m4096_n4096_k4096_wt_ws m4096_n4096_k4096_wt_tma2; do
  timeout 200 ncu --target-processes all -k regex:iron_gemm_128x256 -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed.sum,launch__registers_per_thread \
    $BIN/iron bench -f iron_gemm/$row --backend cuda --dtype bf16 --samples 1 --warmup 0 > $R/ncu-$row.txt 2>&1
  echo "== $row rc=$?"; grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc A|bank_conflicts|wavefronts|inst_executed|registers_per|Warp Cycles Per Issued|Stall|Tensor|Pipe" $R/ncu-$row.txt | head -30
  pack
done
