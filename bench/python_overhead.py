#!/usr/bin/env python3
"""Host cost of one iron.call from Python on torch CUDA tensors (plan cached; three DLPack
imports; one launch on the current stream), against the same op in torch eager, per call, with
the GPU work too small to matter (n = 1024). Prints one JSON line; needs torch with CUDA.

  python3 bench/python_overhead.py [--calls 2000]
"""
import argparse
import json
import sys
import time


def per_call_us(torch, fn, calls):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = time.perf_counter() - t0
    torch.cuda.synchronize()
    return host / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("python_overhead: needs torch")
    if not torch.cuda.is_available():
        sys.exit("python_overhead: needs a CUDA device")
    import iron

    a = torch.randn(1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    out = torch.empty_like(a)
    rows = {
        "iron.call(iron_add, out=)": lambda: iron.call("iron_add", a=a, b=b, out=out, n=1024),
        "iron.call(iron_add) allocating": lambda: iron.call("iron_add", a=a, b=b, n=1024),
        "torch.add(out=)": lambda: torch.add(a, b, out=out),
        "a + b": lambda: a + b,
    }
    result = {"type": "python_overhead", "calls": args.calls, "device": torch.cuda.get_device_name(),
              "python": sys.version.split()[0], "torch": torch.__version__, "iron": iron.__version__,
              "host_us_per_call": {k: round(per_call_us(torch, f, args.calls), 2) for k, f in rows.items()}}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
