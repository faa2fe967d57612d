# Session 9, mma run 2 (final): iron_gemm's 128x128x64 tile beside cuBLAS and Triton, both orders; every MMA path's tests.
set -u
bash .gpu-mb/setup.sh mma
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/ic
B=/tmp/b/mma/bin; T=/tmp/b/mma/tree; O=/tmp/o; mkdir -p $O; export LD_LIBRARY_PATH=$B
pack() { tar -C $O -czf $OUT/run.tgz . ; }
cd $T
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
BF="--backend cuda --dtype bf16 --samples 30 --flush-l2 -v"
rows() { for f in iron_gemm/m2048_n14336_k4096 iron_gemm/m4096_n4096_k4096 ${R8:-}; do timeout 60 $B/iron bench -f $f $BF 2>&1 | grep -E "^iron_gemm|FAIL|fail|rror" | grep -v routed | cut -c1-190; done; }
echo "== iron, first (each row passes its oracle before timing)"; R8=iron_gemm/m8192 rows | tee $O/bench1.txt; pack
echo "== peers"; timeout 120 python3 bench/peers/gemm_peers.py --out $O/gemm-peers.json --samples 30 --flush-l2 --filter m2048_n14336_k4096,m4096_n4096_k4096,m8192 > $O/peers.txt 2>&1; echo rc=$?; grep -E "^ok|FAIL|not ok" $O/peers.txt | cut -c1-150; pack
echo "== iron, second"; R8=iron_gemm/m8192 rows | tee $O/bench2.txt; pack
echo "== tests: iron_gemm on mma, wmma, software; Gemm unit; tile conformance"
timeout 50 $B/iron test --backend cuda -f iron_gemm > $O/test-mma.txt 2>&1; echo "mma rc=$?"; tail -1 $O/test-mma.txt; grep -m3 "^FAIL" $O/test-mma.txt
for s in wmma software; do IRON_CUDA_MMA=$s timeout 50 $B/iron test --backend cuda -f iron_gemm > $O/test-$s.txt 2>&1; echo "$s rc=$?"; tail -1 $O/test-$s.txt; grep -m3 "^FAIL" $O/test-$s.txt; done; pack
timeout 60 $B/iron_unit_tests --gtest_filter='Gemm*:CodegenTiles*:TileLayouts*:AsyncCopy*:TgAlias*' > $O/unit.txt 2>&1; echo "unit rc=$?"; grep -E "^\[  (PASSED|FAILED)|\[  FAILED" $O/unit.txt | head -6
timeout 40 $B/iron conformance --backend cuda -f tile > $O/conf-tile.txt 2>&1; echo "conformance rc=$?"; tail -1 $O/conf-tile.txt; grep -m3 "^FAIL" $O/conf-tile.txt; pack
echo "== ncu"; timeout 60 ncu --clock-control none --target-processes all --set full -k regex:iron_gemm_128 -c 1 $B/iron bench -f iron_gemm/m4096_n4096_k4096_wt --backend cuda --dtype bf16 --samples 1 --warmup 0 > $O/ncu.txt 2>&1; echo rc=$?; grep -E "Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|Issue Slots Busy|Dynamic Shared|Block Limit Reg|Block Limit Sh|No Eligible|Duration|Executed Instructions  " $O/ncu.txt | head -16; pack
