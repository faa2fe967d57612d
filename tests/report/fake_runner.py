#!/usr/bin/env python3
# A stand-in for iron-runner (IRON_RUNNER=this file) that speaks the protocol of
# src/core/protocol.hpp for `list` and `bench`, so check_cli.py can test `iron snap`, `diff` and
# `ab` without a GPU. Latencies are synthetic: a base per bench, log-normal noise, a factor for
# --kernel-override (FAKE_OVERRIDE_FACTOR), one for everything (FAKE_SCALE), and a drift per
# process (FAKE_DRIFT; FAKE_STATE counts processes) that imitates a device warming up.
import json
import math
import os
import random
import sys

V = 1
BENCHES = [  # kernel, bench, base median us at f32, bytes per element, flops per element, n, sweep
    ("iron_add", "n4096", 4.0, 12, 1, 4096, "iron_add"),
    ("iron_add", "n4m", 40.0, 12, 1, 1 << 22, "iron_add"),
    ("iron_add", "n16m", 150.0, 12, 1, 1 << 24, "iron_add"),
    ("iron_mul", "n16m", 151.0, 12, 1, 1 << 24, "iron_mul"),
]
KERNELS = ["iron_add", "iron_mul", "iron_add_v2"]
DTYPES = {"f32": 1.0, "f16": 0.55, "bf16": 0.55}


def send(msg):
    msg["v"] = V
    sys.stdout.write(json.dumps(msg) + "\n")


def arg(args, flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default


def process_index():
    path = os.environ.get("FAKE_STATE")
    if not path:
        return 0
    n = int(open(path).read() or 0) if os.path.exists(path) else 0
    with open(path, "w") as f:
        f.write(str(n + 1))
    return n


def bench(args):
    flt = arg(args, "-f", "")
    only = arg(args, "--dtype")
    samples = int(arg(args, "--samples", "50"))
    override = arg(args, "--kernel-override")
    if override and override not in KERNELS:
        send({"type": "error", "message": "unknown kernel '%s'" % override})
        return 2
    factor = float(os.environ.get("FAKE_OVERRIDE_FACTOR", "0.9")) if override else 1.0
    factor *= float(os.environ.get("FAKE_SCALE", "1"))
    drift = 1.0 + float(os.environ.get("FAKE_DRIFT", "0")) * process_index()
    rng = random.Random()  # a fresh process: fresh noise
    send({"type": "device", "backend": "cuda", "available": True, "name": "Fake GPU", "driver": "0", "arch": "sm_90a",
          "lane_width": 32})
    for kernel, name, base, bpe, fpe, n, sweep in BENCHES:
        if flt and flt not in kernel and flt not in kernel + "/" + name:
            continue
        for dt, scale in DTYPES.items():
            if only and dt != only:
                continue
            med = base * scale * factor * drift
            s = [med * math.exp(rng.gauss(0, 0.01)) for _ in range(samples)]
            ss = sorted(s)
            mean = sum(s) / len(s)
            size = {"f32": 4, "f16": 2, "bf16": 2}[dt]
            b, f = bpe / 4 * size * n, fpe * n
            m = ss[len(ss) // 2]
            send({"type": "bench", "kernel": kernel, "bench": name, "dtype": dt, "backend": "cuda", "device": "Fake GPU",
                  "source": "iron", "status": "ok", "message": "", "correctness": {"status": "pass", "max_error": 0,
                  "tolerance": 1e-6}, "warmup": 20, "flush_l2": "--flush-l2" in args, "samples_us": s,
                  "stats": {"n": len(s), "min_us": ss[0], "median_us": m, "mean_us": mean,
                            "p95_us": ss[math.ceil(0.95 * len(s)) - 1], "p99_us": ss[math.ceil(0.99 * len(s)) - 1],
                            "cv": 0.01}, "bytes": b, "flops": f, "sweep": sweep, "size": n,
                  "metrics": {"gbps": b / m / 1e3, "gflops": f / m / 1e3, "intensity": f / b, "pct_peak_bw": None,
                              "pct_peak_compute": None, "pct_measured_bw": None, "pct_measured_compute": None,
                              "bottleneck": ""}, "resources": None})
    return 0


def main():
    args = sys.argv[1:]
    send({"type": "hello", "runner_version": "fake"})
    if args and args[0] == "list":
        for k in KERNELS:
            send({"type": "kernel", "name": k, "mode": "Elementwise", "dtypes": list(DTYPES), "file": "fake", "line": 1})
        return 0
    if args and args[0] == "bench":
        if os.environ.get("FAKE_CRASH"):
            os.kill(os.getpid(), 11)
        return bench(args)
    send({"type": "error", "message": "fake runner: unsupported command %r" % args})
    return 2


if __name__ == "__main__":
    sys.exit(main())
