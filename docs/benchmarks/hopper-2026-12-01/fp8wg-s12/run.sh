# The warpgroup FP8 GEMM (iron_gemm_fp8_128x128x128_wg_s3, wgmma m64n128k32 e4m3 / e5m2) on the
# H200, one device call: correctness first (the family's cases on CUDA, where the default route is
# now the warpgroup kernel and the wg_ cases ask for it; the fp8 warpgroup conformance cases; the
# GemmFp8 and WarpgroupTiles unit tests, whose QGMMA checks need cuobjdump), then the registers and
# the SASS's tensor instructions of the CUBINs NVRTC builds for sm_90a (QGMMA expected, no HMMA or
# F2FP in the warpgroup kernels), then the 8192^3 benches (the warpgroup kernel per-tensor and
# block-scaled, the mma.sync kernel per-tensor beside them: a 2048-element sample of C against the
# f64 definition before timing; 20 warm-up calls, 50 samples, L2 flushed), then the peer
# torch._scaled_mm in the same call.
# Run as .gpu-mb/fp8wg.sh on the device (`source .gpu-mb/setup.sh fp8wg` unpacks the bundle).
set -u
source .gpu-mb/setup.sh fp8wg
R=/tmp/res; mkdir -p $R
export XDG_CACHE_HOME=/tmp/iron-cache PATH=$PATH:/usr/local/cuda/bin
cd $B
pack() { tar czf $OUT/run.tgz -C $R .; }
echo "== correctness on CUDA"
timeout 120 iron test --backend cuda -f iron_gemm_fp8 > $R/test-gemm-fp8.txt 2>&1; echo "rc=$?" >> $R/test-gemm-fp8.txt
tail -14 $R/test-gemm-fp8.txt
timeout 60 iron conformance --backend cuda -f tile_wg_mma > $R/conformance.txt 2>&1; echo "rc=$?" >> $R/conformance.txt
tail -3 $R/conformance.txt
timeout 120 bin/iron_unit_tests --gtest_filter='GemmFp8*:WarpgroupTiles.Fp8*:TileScaleAdd*' > $R/unit.txt 2>&1
echo "rc=$?" >> $R/unit.txt; tail -6 $R/unit.txt
pack
echo "== registers and SASS (NVRTC sm_90a, cuobjdump)"
timeout 60 iron build -o /tmp/fp8build --emit cuda -f iron_gemm_fp8_128x128x128 --arch sm_90a > $R/build.txt 2>&1
for f in $(find /tmp/fp8build -name '*.cubin' | sort); do
  echo "## $f"; cuobjdump --dump-resource-usage $f 2>&1 | grep -i -E 'REG|STACK|SHARED' | head -4
  cuobjdump -sass $f 2>/dev/null | grep -o -E 'QGMMA\.[A-Z0-9x.]+|HGMMA\.[A-Z0-9x.]+|HMMA\.[A-Z0-9.]+|F2FP\.[A-Z0-9.]+|WARPGROUP\.[A-Z]+' | sort | uniq -c
done > $R/resources.txt 2>&1
head -60 $R/resources.txt
pack
echo "== Iron 8192^3: warpgroup per-tensor and block scales, mma.sync per-tensor"
timeout 180 iron bench -f iron_gemm_fp8 --backend cuda --warmup 20 --samples 50 --flush-l2 --json > $R/bench.json 2> $R/bench.txt
echo "rc=$?" >> $R/bench.txt; tail -10 $R/bench.txt
pack
echo "== peer: torch._scaled_mm"
timeout 90 python3 bench/peers/fp8_peers.py --out $R/fp8-peers.json --samples 50 --flush-l2 > $R/peers.txt 2>&1
echo "rc=$?" >> $R/peers.txt; cat $R/peers.txt
pack
