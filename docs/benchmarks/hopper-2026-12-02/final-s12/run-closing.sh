# Session 12, closing call (nvidia-h200): the GEMM / warpgroup / tensor-map / fp8 / strand unit rows
# with cuobjdump (the SASS checks: HGMMA, UTMALDG, QGMMA), the warpgroup cases on NVIDIA Vulkan
# (the ws fix) and the fp8 family's cases on CUDA, from the merged tree's binaries.
set -u
source .gpu-mb/setup.sh main > /dev/null; cd $B
BIN=$B/bin; export LD_LIBRARY_PATH=$BIN XDG_CACHE_HOME=/tmp/ic IRON_NO_REBUILD=1 PATH=/usr/local/cuda/bin:$PATH IRON_CUOBJDUMP=/usr/local/cuda/bin/cuobjdump
R=/tmp/res; mkdir -p $R; pack() { tar czf $OUT/run.tgz -C $R .; }
timeout 200 $BIN/iron_unit_tests --gtest_filter='Gemm*:Warpgroup*:Tma*:Mbarrier*:TensorMaps*:TileScale*:WarpSpecialize*' > $R/unit.txt 2>&1; echo rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED  \]|\[  SKIPPED \]|Skipped" $R/unit.txt | head -20; pack
timeout 100 $BIN/iron test --backend vulkan -f iron_gemm/wg_ > $R/test-vulkan-wg.txt 2>&1; tail -1 $R/test-vulkan-wg.txt
timeout 100 $BIN/iron test --backend cuda -f iron_gemm_fp8 > $R/test-cuda-fp8.txt 2>&1; tail -1 $R/test-cuda-fp8.txt; pack
