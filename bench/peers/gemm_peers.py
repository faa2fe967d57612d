#!/usr/bin/env python3
"""GEMM peers of Iron's GEMM benchmarks (issue 12's performance shapes): cuBLAS through
torch.matmul and a Triton matmul written as a Triton user writes it (triton_gemm.py: grouped tile
order, autotuned block shapes), timed like the Iron runner times (CUDA events per sample, the L2
optionally flushed outside them) and written as a snapshot (src/core/protocol.hpp) that
`iron diff` and `iron report` read next to an Iron snapshot. See README.md.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peers as tp  # noqa: E402  (statistics, metrics, device ceilings, the timer)

FAMILY = "iron_gemm"  # the Iron family these rows line up with (IRON_BENCH(iron_gemm, <name>))
TOLERANCE = 1e-2      # normwise: max |out - ref| / max |ref|, as torch_peers' GEMM rows

# (bench name, M, N, K, sweep): C[M, N] = A[M, K] @ W[N, K]^T, bf16 in, f32 accumulate, bf16 out.
SHAPES = [
    # The seeds' split-K shapes: [M, 2048] x [2048, 512].
    ("m96_n512_k2048", 96, 512, 2048, "gemm_n512_k2048"),
    ("m256_n512_k2048", 256, 512, 2048, "gemm_n512_k2048"),
    # N = 96, K = 5120 at M in {1, 26, 49, 256}.
    ("m1_n96_k5120", 1, 96, 5120, "gemm_n96_k5120"),
    ("m26_n96_k5120", 26, 96, 5120, "gemm_n96_k5120"),
    ("m49_n96_k5120", 49, 96, 5120, "gemm_n96_k5120"),
    ("m256_n96_k5120", 256, 96, 5120, "gemm_n96_k5120"),
    # Decode M = 1..16 at K = 4096, N = 14336 (memory bound: the weights once).
    ("m1_n14336_k4096", 1, 14336, 4096, "gemm_n14336_k4096"),
    ("m2_n14336_k4096", 2, 14336, 4096, "gemm_n14336_k4096"),
    ("m4_n14336_k4096", 4, 14336, 4096, "gemm_n14336_k4096"),
    ("m8_n14336_k4096", 8, 14336, 4096, "gemm_n14336_k4096"),
    ("m16_n14336_k4096", 16, 14336, 4096, "gemm_n14336_k4096"),
    # Large prefill and the square shapes.
    ("m2048_n14336_k4096", 2048, 14336, 4096, "gemm_n14336_k4096"),
    ("m4096_n4096_k4096", 4096, 4096, 4096, "gemm_square"),
    ("m8192_n8192_k8192", 8192, 8192, 8192, "gemm_square"),
]
SOURCES = ("cublas", "triton")


def gemm_bytes(m, n, k, size):
    """A, W and C, each once."""
    return float((m * k + n * k + m * n) * size)


def gemm_flops(m, n, k):
    return 2.0 * m * n * k


def self_test():
    names = [s[0] for s in SHAPES]
    assert len(names) == len(set(names)) == 14, names
    for name, m, n, k, _ in SHAPES:
        assert name == "m%d_n%d_k%d" % (m, n, k), name
    assert gemm_bytes(4096, 4096, 4096, 2) == 3 * 4096 * 4096 * 2
    assert gemm_flops(2048, 14336, 4096) == 2.0 * 2048 * 14336 * 4096
    # Decode at M = 1: the weights dominate the bytes (14336 x 4096 bf16 = 117 MB).
    assert abs(gemm_bytes(1, 14336, 4096, 2) - 2 * (4096 + 14336 * 4096 + 14336)) < 1
    # 30 us for it is 3.9 TB/s: memory bound on the H200.
    m = tp.derive_metrics(30.0, gemm_bytes(1, 14336, 4096, 2), gemm_flops(1, 14336, 4096), "bf16",
                          tp.lookup_spec("NVIDIA H200"))
    assert m["bottleneck"] == "memory" and abs(m["gbps"] - gemm_bytes(1, 14336, 4096, 2) / 3e4) < 1e-9, m
    print("gemm_peers self-test: all checks passed")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="snapshot file to write (JSON); required unless --self-test")
    ap.add_argument("--name", default="gemm-peers", help="snapshot name recorded in the file")
    ap.add_argument("--samples", type=int, default=100, help="timed samples per shape and source (default 100)")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up calls before timing (at least 20)")
    ap.add_argument("--filter", default="", help="only shapes whose name contains this text (comma-separated: any)")
    ap.add_argument("--sources", default=",".join(SOURCES), help="comma-separated subset of: " + ",".join(SOURCES))
    ap.add_argument("--flush-l2", action="store_true", help="write a 256 MiB buffer before every sample")
    ap.add_argument("--flush-l2-read", action="store_true",
                    help="read a 256 MiB buffer before every sample instead (leaves no dirty line in the L2; "
                         "iron bench --flush-l2-read)")
    ap.add_argument("--measured-gbps", type=float, help="measured bandwidth ceiling for pct_measured_bw (H200: 4270)")
    ap.add_argument("--self-test", action="store_true", help="check the shape table and helpers (no torch needed) and exit")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.out:
        ap.error("--out is required")
    if args.warmup < 20:
        ap.error("--warmup must be at least 20 (engineering guide §6.2)")
    sources = [s for s in args.sources.split(",") if s]
    for s in sources:
        if s not in SOURCES:
            ap.error("unknown source %r (use %s)" % (s, ",".join(SOURCES)))

    try:
        import torch
    except ImportError as e:
        print("gemm_peers: PyTorch is not importable here (%s); --self-test runs without it" % e, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gemm_peers: CUDA is not available: the GEMM peers run on the GPU machine", file=sys.stderr)
        return 2
    tg = None
    if "triton" in sources:
        try:
            import triton_gemm as tg
        except Exception as e:  # no triton: its rows are errors with the reason, cuBLAS still runs
            tg_error = "%s: %s" % (type(e).__name__, e)
    device = "cuda"
    device_name = torch.cuda.get_device_name(0)
    spec = tp.lookup_spec(device_name)
    if args.flush_l2 and args.flush_l2_read:
        ap.error("--flush-l2 and --flush-l2-read are two protocols: give one")
    timer = tp.Timer(torch, device, args.flush_l2, 256 << 20, args.flush_l2_read)
    tiny = torch.zeros(1, device=device)
    floor_us = tp.summarize(timer.run(lambda: tiny.add_(1), 20, 50))["median_us"]
    print("gemm_peers: %s, torch %s, launch floor %.2f us" % (device_name, torch.__version__, floor_us), file=sys.stderr)

    results, started = [], time.time()
    for name, m, n, k, sweep in SHAPES:
        if args.filter and not any(f and f in name for f in args.filter.split(",")):
            continue
        g = torch.Generator(device=device)
        g.manual_seed(1234)
        # Bounded inputs as the Iron fixtures make them: uniform in [-1, 1], rounded to bf16 once.
        a = (torch.rand((m, k), generator=g, device=device) * 2 - 1).to(torch.bfloat16)
        w = (torch.rand((n, k), generator=g, device=device) * 2 - 1).to(torch.bfloat16)
        ref = a.double() @ w.double().T  # float64 on the device: seconds, not minutes, at 8192^3
        ref_max = float(ref.abs().max())
        out = torch.empty((m, n), dtype=torch.bfloat16, device=device)
        for source in sources:
            rec = {"kernel": FAMILY, "bench": name, "dtype": "bf16", "backend": "cuda", "device": device_name,
                   "source": source, "status": "error", "message": "", "correctness": None, "warmup": args.warmup,
                   "flush_l2": args.flush_l2 or args.flush_l2_read, "flush_l2_read": args.flush_l2_read,
                   "samples_us": [], "stats": None, "bytes": gemm_bytes(m, n, k, 2),
                   "flops": gemm_flops(m, n, k), "sweep": sweep, "size": float(m), "metrics": None, "resources": None}
            t0 = time.time()
            try:
                if source == "cublas":
                    how = "torch.matmul(A, W.T, out=) (cuBLAS)"
                    call = lambda: torch.matmul(a, w.T, out=out)
                else:
                    if tg is None:
                        raise RuntimeError("triton_gemm is not importable: " + tg_error)
                    call = lambda: tg.matmul(a, w, out)
                    how = "Triton matmul (grouped order, autotuned)"
                call()  # autotunes, for Triton
                torch.cuda.synchronize()
                if source == "triton":
                    how += ": " + tg.best_config(a, w)
                err = float((out.double() - ref).abs().max()) / max(ref_max, 1e-30)
                ok = math.isfinite(err) and err <= TOLERANCE
                rec["correctness"] = {"status": "pass" if ok else "fail", "max_error": err if math.isfinite(err) else None,
                                      "tolerance": TOLERANCE}
                rec["message"] = how
                if not ok:
                    rec["status"] = "fail"
                    rec["message"] = "%s: max error %.3g > tolerance %.3g" % (how, err, TOLERANCE)
                else:
                    s = timer.run(call, args.warmup, args.samples)
                    st = tp.summarize(s)
                    rec.update({"status": "ok", "samples_us": s, "stats": st,
                                "metrics": tp.derive_metrics(st["median_us"], rec["bytes"], rec["flops"], "bf16", spec,
                                                             args.measured_gbps, None, floor_us)})
            except Exception as e:
                rec["status"] = "error"
                rec["message"] = "%s: %s: %s" % (source, type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            results.append(rec)
            line = "%-4s %-22s %-7s" % ("ok" if rec["status"] == "ok" else rec["status"].upper(), name, source)
            if rec["status"] == "ok":
                line += " median %9.2f us  %7.1f TFLOP/s  %7.1f GB/s  (%s)" % (
                    rec["stats"]["median_us"], rec["metrics"]["gflops"] / 1e3, rec["metrics"]["gbps"], rec["message"])
            else:
                line += " " + rec["message"]
            print(line + "  [%.1f s]" % (time.time() - t0), file=sys.stderr)
        a = w = ref = out = None
        torch.cuda.empty_cache()

    snap = {"v": tp.PROTOCOL_VERSION, "name": args.name,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "results": results}
    tmp = args.out + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(snap, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    bad = sum(r["status"] != "ok" for r in results)
    print("gemm_peers: wrote %d results to %s in %.0f s (%d not ok)" % (len(results), args.out, time.time() - started, bad),
          file=sys.stderr)
    return 1 if bad or not results else 0


if __name__ == "__main__":
    sys.exit(main())
