#!/bin/bash
# Session 9, issue 13 item 1: the tensor-map copies on the H200.
B=/tmp/b/tma/bin
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/ic
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
echo "== iron conformance --backend cuda -f conformance.tma_"
$B/iron conformance --backend cuda -f conformance.tma_ 2>&1 | tee $OUT/conformance-tma-cuda.txt | tail -40
echo "== iron conformance --backend cuda -f conformance.bulk_copy (regression)"
$B/iron conformance --backend cuda -f conformance.bulk_copy 2>&1 | tee $OUT/conformance-bulk-cuda.txt | tail -3
echo "== iron_unit_tests --gtest_filter=Tma*:MbarrierDevice*:TensorMaps*:BlobParams*"
LD_LIBRARY_PATH=$B $B/iron_unit_tests --gtest_filter='Tma*:MbarrierDevice*:TensorMaps*:BlobParams*' 2>&1 | tee $OUT/unit-tma-cuda.txt | grep -v "^\[       OK\|^\[ RUN" | tail -40
