#!/usr/bin/env python3
"""PyTorch peers of Iron's sequence benchmark (bench/host_bench.cpp, BM_Sequence200): the same
200-kernel sequence of small launches -- out = a + b on 8 f32 elements, 200 times, every launch
writing the same output -- run by torch eager and by a CUDA graph captured from it
(torch.cuda.CUDAGraph), each sample one whole sequence and a wait for it, on the host clock, as
the Iron benchmark measures a replay and Context::synchronize. Writes the snapshot format of the
other peers (src/core/protocol.hpp: {"v", "name", "created", "results"}); see README.md.
"""
import argparse
import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peers import PROTOCOL_VERSION, summarize  # noqa: E402  (statistics as the Iron runner computes them)

KERNELS = 200  # BM_Sequence200's kSequenceSteps
N = 8          # its kN: one threadgroup of 32 threads in Iron


def self_test():
    """What runs without torch: the sample arithmetic and a record's shape."""
    rec = make_record("torch-eager", "cpu", "cpu (test)", 5)
    finish(rec, [2000.0, 1000.0, 3000.0])
    assert rec["status"] == "ok", rec
    assert rec["stats"]["median_us"] == 2000.0, rec["stats"]
    assert abs(rec["metrics"]["per_kernel_us"] - 2000.0 / KERNELS) < 1e-12, rec["metrics"]
    assert rec["bytes"] == KERNELS * 3 * N * 4 and rec["flops"] == KERNELS * N, rec
    print("sequence_peers self-test: all checks passed")
    return 0


def make_record(source, backend, device_name, warmup):
    return {"kernel": "sequence%d" % KERNELS, "bench": "iron_add_n%d" % N, "dtype": "f32", "backend": backend,
            "device": device_name, "source": source, "status": "error", "message": "", "correctness": None,
            "warmup": warmup, "flush_l2": False, "samples_us": [], "stats": None, "bytes": KERNELS * 3 * N * 4,
            "flops": KERNELS * N, "sweep": "kernels", "size": KERNELS, "metrics": None, "resources": None}


def finish(rec, samples_us):
    st = summarize(samples_us)
    # The usual metrics (a sequence of tiny launches is latency bound by construction), and the
    # figure issue 11 sets its target in: microseconds per kernel.
    rec.update({"status": "ok", "samples_us": samples_us, "stats": st,
                "metrics": {"gbps": rec["bytes"] / st["median_us"] / 1e3, "gflops": rec["flops"] / st["median_us"] / 1e3,
                            "intensity": rec["flops"] / rec["bytes"], "pct_peak_bw": None, "pct_peak_compute": None,
                            "pct_measured_bw": None, "pct_measured_compute": None, "bottleneck": "latency",
                            "per_kernel_us": st["median_us"] / KERNELS, "min_per_kernel_us": st["min_us"] / KERNELS}})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="snapshot file to write (JSON); required unless --self-test")
    ap.add_argument("--name", default="sequence-peers", help="snapshot name recorded in the file")
    ap.add_argument("--samples", type=int, default=2000, help="timed sequences per source (default 2000)")
    ap.add_argument("--warmup", type=int, default=50, help="untimed sequences first (default 50)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (eager only: a smoke check)")
    ap.add_argument("--self-test", action="store_true", help="check the helpers (no torch needed) and exit")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.out:
        ap.error("--out is required")
    if args.samples < 1 or args.warmup < 1:
        ap.error("--samples and --warmup must be positive")
    try:
        import torch
    except ImportError as e:
        print("sequence_peers: PyTorch is not importable here (%s); --self-test runs without it" % e, file=sys.stderr)
        return 2
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        print("sequence_peers: CUDA is not available (use --device cpu for a smoke check)", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    device_name = torch.cuda.get_device_name(device) if cuda else "cpu (torch)"
    backend = "cuda" if cuda else "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    a = torch.ones(N, dtype=torch.float32, device=device)
    b = torch.ones(N, dtype=torch.float32, device=device)
    out = torch.zeros(N, dtype=torch.float32, device=device)

    def sequence():
        for _ in range(KERNELS):
            torch.add(a, b, out=out)

    sources = [("torch-eager", sequence, "torch.add(a, b, out=out) x %d, then a synchronize" % KERNELS)]
    graph = None
    if cuda:
        # Captured on a side stream as torch's documentation does it, after a warm-up there.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                sequence()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            sequence()
        sources.append(("torch-cudagraph", graph.replay,
                        "torch.cuda.CUDAGraph of the same %d launches: replay(), then a synchronize" % KERNELS))

    results = []
    for source, run, how in sources:
        rec = make_record(source, backend, device_name, args.warmup)
        rec["message"] = how
        try:
            out.zero_()
            run()
            sync()
            ok = bool(torch.equal(out, a + b))
            rec["correctness"] = {"status": "pass" if ok else "fail", "max_error": float((out - (a + b)).abs().max()),
                                  "tolerance": 0.0}
            if not ok:
                rec["status"] = "fail"
                rec["message"] = how + ": the output is not a + b"
            else:
                for _ in range(args.warmup):
                    run()
                    sync()
                samples = []
                for _ in range(args.samples):
                    t0 = time.perf_counter_ns()
                    run()
                    sync()
                    samples.append((time.perf_counter_ns() - t0) / 1000.0)
                finish(rec, samples)
        except Exception as e:
            rec["status"] = "error"
            rec["message"] = "%s: %s: %s" % (how, type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        results.append(rec)
        if rec["status"] == "ok":
            print("ok   %-16s %s: median %.1f us per sequence, %.3f us per kernel (min %.3f)" %
                  (source, device_name, rec["stats"]["median_us"], rec["metrics"]["per_kernel_us"],
                   rec["metrics"]["min_per_kernel_us"]), file=sys.stderr)
        else:
            print("%-4s %-16s %s" % (rec["status"].upper(), source, rec["message"]), file=sys.stderr)

    snap = {"v": PROTOCOL_VERSION, "name": args.name,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "results": results}
    tmp = args.out + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(snap, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    bad = sum(r["status"] != "ok" for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
