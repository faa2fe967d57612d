#!/usr/bin/env python3
"""FP8 GEMM peers of Iron's iron_gemm_fp8 benchmarks: torch._scaled_mm (cuBLASLt's FP8 GEMM) with
per-tensor scales, and with row-wise scales where this torch takes them, timed like the Iron
runner times (CUDA events per sample, the L2 optionally flushed outside them, warm-up first, min
and median) and written as a snapshot (src/core/protocol.hpp) that `iron diff` reads next to an
Iron snapshot. Each row is checked first against the float32 product of the dequantized inputs
(TF32 off), normwise.
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

FAMILY = "iron_gemm_fp8"  # IRON_BENCH(iron_gemm_fp8, <name>) in kernels/gemm/gemm_fp8_cases.cpp
TOLERANCE = 1e-2          # normwise: max |out - ref| / max |ref| (bf16 output: 2^-9 relative)

# (bench name, M, N, K, scaling): C[M, N] = scale(A[M, K] @ W[N, K]^T), e4m3 in, bf16 out.
SHAPES = [
    ("m8192_n8192_k8192_tensor", 8192, 8192, 8192, "tensor"),
    ("m8192_n8192_k8192_rowwise", 8192, 8192, 8192, "rowwise"),
    ("m4096_n4096_k4096_tensor", 4096, 4096, 4096, "tensor"),
]


def fp8_bytes(m, n, k):
    """A and W once (1 byte each), C once (bf16)."""
    return float(m * k + n * k + 2 * m * n)


def self_test():
    assert fp8_bytes(8192, 8192, 8192) == 8192 * 8192 * 4
    for name, m, n, k, how in SHAPES:
        assert name == "m%d_n%d_k%d_%s" % (m, n, k, how), name
    print("fp8_peers self-test: all checks passed")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="snapshot file to write (JSON); required unless --self-test")
    ap.add_argument("--name", default="fp8-peers", help="snapshot name recorded in the file")
    ap.add_argument("--samples", type=int, default=100, help="timed samples per shape (default 100)")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up calls before timing (at least 20)")
    ap.add_argument("--flush-l2", action="store_true", help="write a 256 MiB buffer before every sample")
    ap.add_argument("--self-test", action="store_true", help="check the shape table (no torch needed) and exit")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.out:
        ap.error("--out is required")
    if args.warmup < 20:
        ap.error("--warmup must be at least 20 (engineering guide §6.2)")
    try:
        import torch
    except ImportError as e:
        print("fp8_peers: PyTorch is not importable here (%s)" % e, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("fp8_peers: CUDA is not available: the peers run on the GPU machine", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    device = "cuda"
    device_name = torch.cuda.get_device_name(0)
    spec = tp.lookup_spec(device_name)
    timer = tp.Timer(torch, device, args.flush_l2, 256 << 20)
    print("fp8_peers: %s, torch %s" % (device_name, torch.__version__), file=sys.stderr)
    results, started = [], time.time()
    for name, m, n, k, how in SHAPES:
        g = torch.Generator(device=device)
        g.manual_seed(1234)
        # Inputs as the Iron bench makes them: uniform in [-1, 1] rounded to e4m3 once.
        a = (torch.rand((m, k), generator=g, device=device) * 2 - 1).to(torch.float8_e4m3fn)
        w = (torch.rand((n, k), generator=g, device=device) * 2 - 1).to(torch.float8_e4m3fn)
        if how == "tensor":
            sa = torch.tensor(0.8125, device=device, dtype=torch.float32)
            sb = torch.tensor(1.375, device=device, dtype=torch.float32)
        else:
            sa = (torch.rand((m, 1), generator=g, device=device) + 0.5).float()
            sb = (torch.rand((1, n), generator=g, device=device) + 0.5).float()
        rec = {"kernel": FAMILY, "bench": name, "dtype": "f8e4m3", "backend": "cuda", "device": device_name,
               "source": "cublas", "status": "error", "message": "", "correctness": None, "warmup": args.warmup,
               "flush_l2": args.flush_l2, "samples_us": [], "stats": None, "bytes": fp8_bytes(m, n, k),
               "flops": 2.0 * m * n * k, "sweep": "fp8_square", "size": float(m), "metrics": None, "resources": None}
        t0 = time.time()
        try:
            what = "torch._scaled_mm(A, W.T, %s scales, out_dtype=bf16) (cuBLASLt)" % how
            call = lambda: torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
            out = call()
            torch.cuda.synchronize()
            ref = (a.float() @ w.float().t()) * (sa * sb)
            ref_max = float(ref.abs().max())
            err = float((out.float() - ref).abs().max()) / max(ref_max, 1e-30)
            ok = math.isfinite(err) and err <= TOLERANCE
            rec["correctness"] = {"status": "pass" if ok else "fail", "max_error": err if math.isfinite(err) else None,
                                  "tolerance": TOLERANCE, "reference": "float32 product of the dequantized inputs"}
            rec["message"] = what
            ref = None
            if not ok:
                rec["status"] = "fail"
                rec["message"] = "%s: max error %.3g > tolerance %.3g" % (what, err, TOLERANCE)
            else:
                s = timer.run(call, args.warmup, args.samples)
                st = tp.summarize(s)
                rec.update({"status": "ok", "samples_us": s, "stats": st,
                            "metrics": tp.derive_metrics(st["median_us"], rec["bytes"], rec["flops"], "bf16", spec,
                                                         None, None, 0.0)})
        except Exception as e:
            rec["status"] = "error"
            rec["message"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        results.append(rec)
        line = "%-4s %-28s" % ("ok" if rec["status"] == "ok" else rec["status"].upper(), name)
        if rec["status"] == "ok":
            line += " min %9.2f us  median %9.2f us  %7.1f TFLOP/s  err %.2e  (%s)" % (
                rec["stats"]["min_us"], rec["stats"]["median_us"], rec["flops"] / rec["stats"]["median_us"] / 1e6,
                rec["correctness"]["max_error"], rec["message"])
        else:
            line += " " + rec["message"]
        print(line + "  [%.1f s]" % (time.time() - t0), file=sys.stderr)
        a = w = out = None
        torch.cuda.empty_cache()
    snap = {"v": tp.PROTOCOL_VERSION, "name": args.name,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "results": results}
    with open(args.out, "w") as f:
        json.dump(snap, f, indent=1)
        f.write("\n")
    print("fp8_peers: wrote %d results to %s in %.0f s" % (len(results), args.out, time.time() - started), file=sys.stderr)
    return 0 if any(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
