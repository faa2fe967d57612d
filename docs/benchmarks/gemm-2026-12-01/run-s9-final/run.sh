# Session 9, final call (nvidia-h200): the merged main (dec, mma, tma, wg) — corpus on CUDA and NVIDIA Vulkan,
# conformance, the GEMM / mbarrier / warpgroup unit rows, the wgmma conformance down each CUDA strategy,
# the fuzzer, then the tensor-map copies (which faulted in tma-s9) last, with compute-sanitizer on one case.
set -u
bash .gpu-mb/setup.sh main
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
B=/tmp/b/main/bin; O=/tmp/o; mkdir -p $O; pack() { tar -C $O -czf $OUT/run.tgz . ; }
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
( timeout 240 $B/iron test --backend cuda > $O/test-cuda.txt 2>&1; echo rc=$? >> $O/test-cuda.txt ) &
( timeout 240 $B/iron test --backend vulkan > $O/test-vulkan.txt 2>&1; echo rc=$? >> $O/test-vulkan.txt ) &
wait
echo "== corpus"; tail -2 $O/test-cuda.txt; tail -2 $O/test-vulkan.txt; grep -h "^FAIL" $O/test-cuda.txt $O/test-vulkan.txt | head -8; pack
echo "== unit"; LD_LIBRARY_PATH=$B timeout 150 $B/iron_unit_tests --gtest_filter='Gemm*:Mbarrier*:WarpgroupTiles.*:TileLayouts.*:CodegenTiles.*:TensorMaps*:Blob*' > $O/unit.txt 2>&1; echo rc=$?; grep -E "^wg_gemm|Failure|FAILED|PASSED|SKIPPED \]" $O/unit.txt | cut -c1-200 | tail -16; pack
echo "== wgmma conformance"; for s in auto wgmma mma software; do IRON_CUDA_MMA=$s timeout 40 $B/iron conformance --backend cuda -f tile_wg_mma > $O/conf-wg-$s.txt 2>&1; echo "$s: $(tail -1 $O/conf-wg-$s.txt)"; grep -m3 "^FAIL" $O/conf-wg-$s.txt | cut -c1-250; done; pack
echo "== conformance vulkan"; timeout 60 $B/iron conformance --backend vulkan > $O/conf-vulkan.txt 2>&1; tail -1 $O/conf-vulkan.txt; grep -m5 "^FAIL" $O/conf-vulkan.txt | cut -c1-200
echo "== fuzz"; timeout 60 $B/iron fuzz --backends interp,cuda --programs 200 > $O/fuzz.txt 2>&1; tail -2 $O/fuzz.txt; pack
echo "== conformance cuda (the tensor-map cases come after every other case but the warpgroup ones)"; timeout 90 $B/iron conformance --backend cuda > $O/conf-cuda.txt 2>&1; tail -1 $O/conf-cuda.txt; grep "^FAIL" $O/conf-cuda.txt | cut -c1-220 | head -6; grep -c "^FAIL" $O/conf-cuda.txt; pack
echo "== tma unit"; LD_LIBRARY_PATH=$B timeout 60 $B/iron_unit_tests --gtest_filter='Tma*' > $O/unit-tma.txt 2>&1; grep -E "Failure|FAILED|PASSED|ILLEGAL" $O/unit-tma.txt | cut -c1-250 | head -8
echo "== tma sanitizer"; timeout 90 compute-sanitizer --tool memcheck $B/iron conformance --backend cuda -f conformance.tma_load_2d.bf16.noswizzle > $O/tma-sanitizer.txt 2>&1; grep -v "^$" $O/tma-sanitizer.txt | head -40 | cut -c1-250; pack
