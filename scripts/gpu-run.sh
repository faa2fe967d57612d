#!/usr/bin/env bash
# One full measurement run on the GPU machine, from the checkout root there (see
# docs/gpu-machine.md): devices, the corpus on CUDA / Vulkan / interpreter, calibration, Iron
# benchmarks in two snapshots (3 fresh processes each) around the PyTorch peers (so both orders are measured), the
# diff, and the host benchmarks. PART=1 or PART=2 runs one half (each fits one 10-minute call);
# state shared by the halves lives in $STATE (default /tmp/iron-gpu). Results land under $OUT.
set -u
out=${OUT:-$PWD/gpu-out}
state=${STATE:-/tmp/iron-gpu}
part=${PART:-all}
mkdir -p "$out" "$state/snaps"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export IRON_NO_REBUILD=1 IRON_SNAP_DIR="$state/snaps" XDG_CACHE_HOME="$state/cache"
samples=${SAMPLES:-100}
cd .gpu
step() { echo "== $*" | tee -a "$out/log.txt"; }
if [ "$part" != 2 ]; then
step device;           ./iron device 2>&1 | tee -a "$out/log.txt"
for b in cuda vulkan interp; do
  step "test $b";      ./iron test --backend "$b" --json --witness "$out/witness-$b.json" > "$out/test-$b.jsonl" \
                         2> "$out/test-$b.summary"
  tail -2 "$out/test-$b.summary" | tee -a "$out/log.txt"
done
# A second CUDA run of the same binaries must give the same witness digest.
step "witness cuda (2)"; ./iron test --backend cuda --witness "$out/witness-cuda-2.json" > /dev/null 2>&1
                       ./iron diff "$out/witness-cuda.json" "$out/witness-cuda-2.json" 2>&1 | tail -3 | tee -a "$out/log.txt"
step "calibrate";      ./iron calibrate --backend cuda 2>&1 | tee -a "$out/log.txt"
step "iron bench (1)"; ./iron snap iron-cuda-1 --backend cuda --samples "$samples" --flush-l2 --force 2>&1 | tail -3 | tee -a "$out/log.txt"
fi
if [ "$part" != 1 ]; then
step "torch peers";    python3 peers/torch_peers.py --out "$state/snaps/torch-peers.json" --samples "$samples" --flush-l2 \
                         2> "$out/torch-peers.log"; tail -3 "$out/torch-peers.log" | tee -a "$out/log.txt"
step "calibrate";      ./iron calibrate --backend cuda 2>&1 | tee -a "$out/log.txt"
step "iron bench (2)"; ./iron snap iron-cuda-2 --backend cuda --samples "$samples" --flush-l2 --force 2>&1 | tail -3 | tee -a "$out/log.txt"
step "bench -v";       ./iron bench --backend cuda --samples "$samples" --flush-l2 -v > "$out/bench-v.txt" 2>&1
step "diff iron 1 vs 2"; ./iron diff iron-cuda-1 iron-cuda-2 > "$out/diff-iron-1-2.txt" 2>&1
tail -1 "$out/diff-iron-1-2.txt" | tee -a "$out/log.txt"   # identical code: 0 faster, 0 slower
step "diff iron vs torch"; ./iron diff iron-cuda-2 "$state/snaps/torch-peers.json" > "$out/diff-iron-torch.txt" 2>&1
step "report";         ./iron report iron-cuda-1 iron-cuda-2 "$state/snaps/torch-peers.json" -o "$out/report.html" 2>&1 \
                         | tee -a "$out/log.txt"
fi
if [ "$part" != 2 ] && [ -x ./iron_host_bench ]; then
  step "host bench"
  ./iron_host_bench --benchmark_filter='Dispatch|DiskCache|Validate' --benchmark_min_time=1 --benchmark_repetitions=3 \
    --benchmark_out="$out/host_bench.json" --benchmark_out_format=json > "$out/host_bench.txt" 2>&1
  tail -8 "$out/host_bench.txt" | tee -a "$out/log.txt"
fi
tar -C "$state" -czf "$out/snaps.tgz" snaps 2>/dev/null
echo "done" | tee -a "$out/log.txt"
