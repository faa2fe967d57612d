# Session 9, tensor-map check: the conformance cases with 16-byte-aligned box columns, the DSL TMA test, then all conformance on CUDA.
set -u
bash .gpu-mb/setup.sh main
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
B=/tmp/b/main/bin; O=/tmp/o; mkdir -p $O; pack() { tar -C $O -czf $OUT/run.tgz . ; }
echo "== tma conformance"; timeout 40 $B/iron conformance --backend cuda -f conformance.tma_ --verbose > $O/conf-tma.txt 2>&1; tail -1 $O/conf-tma.txt; grep -m4 "^FAIL" $O/conf-tma.txt | cut -c1-250
echo "== tma unit"; LD_LIBRARY_PATH=$B timeout 60 $B/iron_unit_tests --gtest_filter='Tma*:TensorMaps*:MbarrierDevice*' > $O/unit-tma.txt 2>&1; grep -E "Failure|FAILED|PASSED|ILLEGAL" $O/unit-tma.txt | cut -c1-250 | head -8; pack
echo "== conformance cuda"; timeout 90 $B/iron conformance --backend cuda > $O/conf-cuda.txt 2>&1; tail -1 $O/conf-cuda.txt; grep "^FAIL" $O/conf-cuda.txt | cut -c1-220 | head -6; pack
