# The FP8 GEMM (iron_gemm_fp8) on the H200, one device call: correctness first (the family's cases
# and the fp8 tile kernel on CUDA, the tile_scale_add conformance cases, the GemmFp8 / TileScaleAdd
# unit tests), then the 8192^3 benches (per-tensor and block scales, bf16 out: a 2048-element
# sample of C against the f64 definition before timing; 20 warm-up calls, 50 samples, L2 flushed),
# the registers and spills of the CUBINs NVRTC builds for sm_90a (cuobjdump), the SASS's mma
# instructions, and the peer torch._scaled_mm (per-tensor and row-wise scales) in the same call.
# Run as .gpu-mb/fp8.sh on the device (`source .gpu-mb/setup.sh fp8` unpacks the bundle).
set -u
source .gpu-mb/setup.sh fp8
R=/tmp/res; mkdir -p $R
export XDG_CACHE_HOME=/tmp/iron-cache PATH=$PATH:/usr/local/cuda/bin
cd $B
pack() { tar czf $OUT/run.tgz -C $R .; }
echo "== correctness on CUDA"
timeout 80 iron test --backend cuda -f iron_gemm_fp8 > $R/test-gemm-fp8.txt 2>&1; echo "rc=$?" >> $R/test-gemm-fp8.txt
tail -12 $R/test-gemm-fp8.txt
timeout 30 iron test --backend cuda -f iron_tile_fp8 > $R/test-tile-fp8.txt 2>&1; echo "rc=$?" >> $R/test-tile-fp8.txt
tail -3 $R/test-tile-fp8.txt
timeout 30 iron conformance --backend cuda -f tile_scale_add > $R/conformance.txt 2>&1; echo "rc=$?" >> $R/conformance.txt
tail -3 $R/conformance.txt
timeout 40 bin/iron_unit_tests --gtest_filter='GemmFp8Selector*:GemmFp8Codegen*:TileScaleAdd*' > $R/unit.txt 2>&1
echo "rc=$?" >> $R/unit.txt; tail -4 $R/unit.txt
pack
echo "== registers and spills (NVRTC sm_90a, cuobjdump)"
timeout 40 iron build -o /tmp/fp8build --emit cuda -f iron_gemm_fp8_128x128x128 --arch sm_90a > $R/build.txt 2>&1
for f in $(find /tmp/fp8build -name '*.cubin' | sort); do
  echo "## $f"; cuobjdump --dump-resource-usage $f 2>&1 | grep -i -E 'REG|STACK|SHARED' | head -4
  cuobjdump -sass $f 2>/dev/null | grep -o -E 'HMMA\.[A-Z0-9.]+|F2FP\.[A-Z0-9.]+|LDSM\.[A-Z0-9.]+|LDGSTS\.[A-Z0-9.]+' | sort | uniq -c
done > $R/resources.txt 2>&1
cat $R/resources.txt | head -40
pack
echo "== Iron 8192^3: per-tensor and block scales"
timeout 140 iron bench -f iron_gemm_fp8 --backend cuda --warmup 20 --samples 50 --flush-l2 --json > $R/bench.json 2> $R/bench.txt
echo "rc=$?" >> $R/bench.txt; tail -8 $R/bench.txt
pack
echo "== peer: torch._scaled_mm"
timeout 90 python3 bench/peers/fp8_peers.py --out $R/fp8-peers.json --samples 50 --flush-l2 > $R/peers.txt 2>&1
echo "rc=$?" >> $R/peers.txt; cat $R/peers.txt
pack
