# Issue 9 rows touched this session: Iron (both orders around the peers) + peers, and the corpus on CUDA and Vulkan.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export IRON_NO_REBUILD=1 XDG_CACHE_HOME=/tmp/iron-c
B=.gpu-mb/new4
( $B/iron test --backend cuda > $OUT/test-cuda.txt 2>&1; echo rc=$? >> $OUT/test-cuda.txt ) &
( $B/iron test --backend vulkan > $OUT/test-vulkan.txt 2>&1; echo rc=$? >> $OUT/test-vulkan.txt ) &
wait
tail -2 $OUT/test-cuda.txt; tail -2 $OUT/test-vulkan.txt; grep FAIL $OUT/test-cuda.txt $OUT/test-vulkan.txt | head -5
bench() {  # $1 tag
  for f in iron_softmax/rows4096_d4096 iron_softmax/rows32768_d4096 iron_softmax/rows64_d128256 iron_argmax/rows1@f32 iron_argmax/rows64@f32 iron_topk/rows1@f32 iron_topk/rows64@f32 $2; do
    ff=${f%@*}; dt=bf16; [ "$f" != "$ff" ] && dt=${f#*@}
    $B/iron bench --backend cuda -f "$ff" --dtype $dt --samples 100 --flush-l2 --json 2>>$OUT/bench-err.txt >> $OUT/iron-$1.jsonl
  done
}
bench first "iron_silu/n1g iron_gelu_tanh/n1g iron_gelu_erf/n1g"
python3 bench/peers/torch_peers.py --out $OUT/peers-bf16.json --samples 100 --flush-l2 --filter softmax,silu,gelu_tanh,gelu_erf --dtype bf16 2> $OUT/peers-bf16.err
python3 bench/peers/torch_peers.py --out $OUT/peers-f32.json --samples 100 --flush-l2 --filter argmax,topk --dtype f32 2> $OUT/peers-f32.err
bench second ""
python3 - <<'PY'
import json,os
for tag in ["first","second"]:
  for l in open(os.environ["OUT"]+"/iron-%s.jsonl"%tag):
    try: m=json.loads(l)
    except: continue
    if m.get("type")=="bench":
      st=m.get("stats") or {}; mt=m.get("metrics") or {}
      print(tag, m["kernel"], m["bench"], m["dtype"], (m.get("correctness") or {}).get("status"), "median %.2f min %.2f %.0f GB/s" % (st.get("median_us",0), st.get("min_us",0), mt.get("gbps") or 0), m.get("plan"))
PY
tail -30 $OUT/peers-bf16.err; tail -20 $OUT/peers-f32.err
