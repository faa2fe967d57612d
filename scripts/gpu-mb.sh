#!/usr/bin/env bash
# The memory-bound library's run on the GPU machine (docs/gpu-machine.md): Iron's corpus and
# benches on CUDA (and Vulkan where asked) and the PyTorch / Triton peers, in one call, so both
# sides are measured on the same device in the same session. Binaries come from $BIN (default
# .gpu-mb); results land under $OUT (log.txt, iron-*.json, peers-*.json, mb.tgz).
#   TEST_FILTER   iron test -f on CUDA (and Vulkan with VULKAN=1); empty: the whole corpus
#   BENCH_FILTER  iron bench -f (comma-separated list runs each; FILTER@DTYPE picks the dtype, bf16
#                 by default); empty: no Iron bench
#   PEER_FILTER   torch_peers.py --filter; PEER_SOURCES --sources; PEER_DTYPE --dtype (default bf16)
#   ORDERS        "iron-first" or "both" (Iron, peers, Iron again: the second order of seeds §6)
set -u
final=${OUT:-$PWD/gpu-out}
work=/tmp/iron-mb
bin=${BIN:-.gpu-mb}
samples=${SAMPLES:-100}
mkdir -p "$work" "$final"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=$work/cache
log() { echo "== $*" | tee -a "$final/log.txt"; }
iron_bench() {  # $1: output tag
  [ -z "${BENCH_FILTER:-}" ] && return
  IFS=',' read -ra filters <<< "$BENCH_FILTER"
  for entry in "${filters[@]}"; do
    f=${entry%@*}
    dt=bf16
    [ "$entry" != "$f" ] && dt=${entry#*@}
    log "iron bench -f $f --dtype $dt ($1)"
    tag=${f//\//_}
    "$bin/iron" bench --backend cuda -f "$f" --dtype "$dt" --samples "$samples" --flush-l2 --json > "$work/bench-$1-$tag.jsonl" 2> "$work/bench-$1-$tag.err"
    grep -h '"type":"summary"' "$work/bench-$1-$tag.jsonl" | tee -a "$final/log.txt"
  done
  cat "$work"/bench-"$1"-*.jsonl > "$final/iron-$1.jsonl" 2>/dev/null
}
log "device"; "$bin/iron" device 2>&1 | tail -12 | tee -a "$final/log.txt"
log "iron test --backend cuda ${TEST_FILTER:+-f $TEST_FILTER}"
"$bin/iron" test --backend cuda ${TEST_FILTER:+-f "$TEST_FILTER"} > "$work/test-cuda.txt" 2>&1; echo "rc=$?" >> "$work/test-cuda.txt"
grep -E "FAIL|passed" "$work/test-cuda.txt" | tail -15 | tee -a "$final/log.txt"
if [ "${VULKAN:-0}" = 1 ]; then
  log "iron test --backend vulkan ${TEST_FILTER:+-f $TEST_FILTER}"
  "$bin/iron" test --backend vulkan ${TEST_FILTER:+-f "$TEST_FILTER"} > "$work/test-vulkan.txt" 2>&1; echo "rc=$?" >> "$work/test-vulkan.txt"
  grep -E "FAIL|passed" "$work/test-vulkan.txt" | tail -15 | tee -a "$final/log.txt"
fi
iron_bench first
if [ -n "${PEER_FILTER:-}" ]; then
  log "peers ${PEER_SOURCES:-all sources} ${PEER_DTYPE:-bf16}"
  python3 bench/peers/torch_peers.py --out "$final/peers.json" --samples "$samples" --flush-l2 \
    --filter "$PEER_FILTER" --dtype "${PEER_DTYPE:-bf16}" ${PEER_SOURCES:+--sources "$PEER_SOURCES"} 2> "$work/peers.err"
  grep -vE "^\s*$" "$work/peers.err" | tail -80 | tee -a "$final/log.txt" > /dev/null
fi
[ "${ORDERS:-iron-first}" = both ] && iron_bench second
tar -C "$work" -czf "$final/mb.tgz" --exclude cache . 2>/dev/null
echo done | tee -a "$final/log.txt"
