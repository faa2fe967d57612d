#!/usr/bin/env python3
"""The memory-bound library's benchmark table (docs/benchmarks/memory-bound-<date>/): Iron's
records (`iron bench --json` lines) beside the peers' (bench/peers/torch_peers.py snapshot), row
by row on kernel/bench/dtype, with the issue's target for each row and whether it was met.

  scripts/mb-table.py --iron iron-first.jsonl [--iron iron-second.jsonl] --peers peers.json > table.md

Several Iron files (the two orders of seeds §6): each figure is the best median over them, and the
spread between them is shown. Rows without an Iron record say so; nothing is filled in by hand.
"""
import argparse
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/bench/peers")
from torch_peers import FAMILIES  # noqa: E402  (the bench names the peers and Iron share)

COPY_TBPS = 3.85  # 90 % of the measured copy bandwidth (counting bytes read and written)


def target(kind, bench):
    """(text, rule) where rule(iron, peers) -> bool; peers maps source -> median_us."""
    def faster_than(sources, factor=1.0):
        def rule(iron, peers):
            have = [peers[s]["median"] for s in sources if s in peers]
            return bool(have) and iron["median"] * factor <= min(have)
        return rule

    def bandwidth(iron, peers):
        return iron["tbps"] >= COPY_TBPS

    def both(a, b):
        return lambda i, p: a(i, p) and b(i, p)

    big = any(s in bench for s in ("rows4096_", "rows32768_", "rows16384_", "t4096_", "t32768_"))
    if kind in ("add", "mul", "silu", "gelu_tanh", "gelu_erf") and bench == "n1g":
        return ">= %.2f TB/s" % COPY_TBPS, bandwidth
    if kind == "rmsnorm":
        rule = faster_than(["torch-rms_norm", "torch-compile", "triton"])
        if bench == "rows1_d4096":
            def near_floor(iron, peers):
                return iron["floor"] > 0 and iron["median"] <= 1.25 * iron["floor"]
            return "faster than F.rms_norm, torch.compile and Triton; <= 1.25x the launch floor", both(rule, near_floor)
        if big:
            return "faster than F.rms_norm, torch.compile and Triton; >= %.2f TB/s" % COPY_TBPS, both(rule, bandwidth)
        return "faster than F.rms_norm, torch.compile and Triton", rule
    if kind == "softmax":
        if "128256" in bench:
            return "faster than torch eager and Triton", faster_than(["torch-eager", "triton"])
        return "faster than Triton; >= %.2f TB/s" % COPY_TBPS, both(faster_than(["triton"]), bandwidth)
    if kind == "layernorm":
        return ">= 1.4x the best peer", faster_than(["torch-layer_norm", "torch-compile", "triton"], 1.4)
    if kind == "swiglu":
        return ">= torch.compile", faster_than(["torch-compile"])
    if kind == "rope_neox":
        f = 2.0 if "t4096_" in bench else 1.05
        return ">= %gx torch.compile; >= %.2f TB/s" % (f, COPY_TBPS), both(faster_than(["torch-compile"], f), bandwidth)
    if kind in ("argmax", "topk"):
        f = 5.0 if "rows1_" in bench else 3.0
        return ">= %gx torch" % f, faster_than(["torch-eager"], f)
    if kind == "gemv":
        if "k320" in bench:
            return ">= 1.5x torch.mv", faster_than(["torch-mv"], 1.5)
        return ">= 1.3x cuBLAS", faster_than(["cublas"], 1.3)
    return "", None


def load_iron(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("type") != "bench":
                    continue
                key = (r["kernel"], r["bench"], r["dtype"])
                rows.setdefault(key, []).append(r)
    return rows


def figure(r):
    st, m = r.get("stats") or {}, r.get("metrics") or {}
    return {"median": st.get("median_us"), "min": st.get("min_us"), "tbps": (m.get("gbps") or 0) / 1000.0,
            "floor": m.get("launch_floor_us") or 0.0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iron", action="append", required=True, help="iron bench --json output (repeatable)")
    ap.add_argument("--peers", required=True, help="torch_peers.py snapshot")
    args = ap.parse_args(argv)
    iron = load_iron(args.iron)
    with open(args.peers) as f:
        peers = json.load(f)["results"]
    kind_of = {v: k for k, v in FAMILIES.items()}
    by_case = {}
    for p in peers:
        if p["kernel"] not in kind_of:
            continue
        by_case.setdefault((p["kernel"], p["bench"], p["dtype"]), {})
        if p["status"] == "ok":
            by_case[(p["kernel"], p["bench"], p["dtype"])][p["source"]] = figure(p)
    print("| benchmark | dtype | Iron median µs (TB/s) | Iron plan | best peer: median µs (TB/s) | Iron speed-up | target | met |")
    print("|---|---|---|---|---|---|---|---|")
    met = missed = absent = 0
    for key in sorted(by_case, key=lambda k: (k[0], k[1])):
        kernel, bench, dtype = key
        kind = kind_of[kernel]
        ps = by_case[key]
        best = min(ps.items(), key=lambda kv: kv[1]["median"]) if ps else None
        peer_text = "%s: %.2f (%.2f)" % (best[0], best[1]["median"], best[1]["tbps"]) if best else "none"
        text, rule = target(kind, bench)
        recs = [r for r in iron.get(key, []) if r.get("status") == "ok"]
        if not recs:
            why = (iron.get(key) or [{}])[0].get("message", "no Iron record")
            print("| %s/%s | %s | — (%s) | | %s | | %s | not measured |" % (kernel, bench, dtype, why[:60], peer_text, text))
            absent += 1
            continue
        figs = [figure(r) for r in recs]
        i = min(figs, key=lambda f: f["median"])
        spread = ""
        if len(figs) > 1:
            hi = max(f["median"] for f in figs)
            spread = " ±%.0f%%" % (100.0 * (hi - i["median"]) / i["median"])
        ok = rule(i, ps) if rule else None
        met += ok is True
        missed += ok is False
        speed = "%.2fx" % (best[1]["median"] / i["median"]) if best else ""
        print("| %s/%s | %s | %.2f%s (%.2f) | %s | %s | %s | %s | %s |" % (
            kernel, bench, dtype, i["median"], spread, i["tbps"], recs[0].get("plan", ""), peer_text, speed, text,
            "yes" if ok else "no" if ok is False else ""))
    print("\n%d targets met, %d missed, %d rows without an Iron measurement." % (met, missed, absent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
