# Session 9, tensor-map stores: each remaining case in its own process (a fault leaves the context unusable).
set -u
bash .gpu-mb/setup.sh main
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
B=/tmp/b/main/bin
for c in tma_store_2d.f32.swizzle32 tma_store_2d.bf16.noswizzle.edge tma_store_2d.bf16.swizzle128.edge tma_tile.f16.swizzle32 tma_tile.f16.swizzle64 tma_tile.f16.swizzle128; do
  timeout 30 $B/iron conformance --backend cuda -f "conformance.$c" --verbose 2>&1 | grep -E "^(ok|FAIL|conformance:)" | grep -v "conformance: " | cut -c1-230
done
