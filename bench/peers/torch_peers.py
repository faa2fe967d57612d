#!/usr/bin/env python3
"""PyTorch peers of Iron's benchmarks: times the shapes of the IRON_BENCH declarations
(kernels/*/*.cpp) with torch eager, torch.compile, F.rms_norm and cuBLAS (F.linear), with the
same statistics and bytes/FLOPs figures as the Iron runner, and writes a snapshot file
(src/core/protocol.hpp) that `iron diff` and `iron report` read. Needs only torch; see README.md.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time

PROTOCOL_VERSION = 1

# ---------------------------------------------------------------------------------------------
# Pure helpers (no torch): statistics, metrics, device ceilings. `--self-test` checks them.


def nearest_rank(sorted_samples, pct):
    """The value at 1-based rank ceil(pct/100 * n), as src/harness/stats.cpp computes it."""
    if not sorted_samples:
        raise ValueError("percentile of no samples")
    rank = math.ceil(pct / 100.0 * len(sorted_samples))
    return sorted_samples[min(max(rank, 1), len(sorted_samples)) - 1]


def summarize(samples_us):
    """stats {n, min_us, median_us, mean_us, p95_us, p99_us, cv} exactly as the Iron runner
    reports them: median of the middle pair for even n, nearest-rank percentiles, and the
    coefficient of variation from the sample (n - 1) standard deviation."""
    if not samples_us:
        raise ValueError("no timing samples")
    if not all(math.isfinite(v) for v in samples_us):
        raise ValueError("a timing sample is not finite")
    s = sorted(samples_us)
    n = len(s)
    mid = n // 2
    median = s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])
    mean = sum(s) / n
    cv = 0.0
    if n > 1 and mean > 0:
        cv = math.sqrt(sum((v - mean) ** 2 for v in s) / (n - 1)) / mean
    return {"n": n, "min_us": s[0], "median_us": median, "mean_us": mean, "p95_us": nearest_rank(s, 95),
            "p99_us": nearest_rank(s, 99), "cv": cv}


# Datasheet ceilings, the NVIDIA rows of src/harness/device_specs.cpp (same matching rule: every
# all_of substring, none of the none_of ones, case-insensitive, most specific first), so the
# peers' percentages of peak are comparable with Iron's. GB/s, FP32 TFLOP/s, FP16/BF16 dense.
DEVICE_SPECS = [
    ("NVIDIA H200 NVL", ("H200", "NVL"), (), 4800, 60, 835.5),
    ("NVIDIA H200 SXM", ("H200",), (), 4800, 67, 989.5),
    ("NVIDIA H100 PCIe", ("H100", "PCIE"), (), 2000, 51, 756.5),
    ("NVIDIA H100 NVL", ("H100", "NVL"), (), 3900, 60, 835.5),
    ("NVIDIA H100 SXM", ("H100",), (), 3350, 67, 989.5),
    ("NVIDIA A100 40GB", ("A100", "40GB"), (), 1555, 19.5, 312),
    ("NVIDIA A100 80GB SXM", ("A100",), (), 2039, 19.5, 312),
    ("NVIDIA L40S", ("L40S",), (), 864, 91.6, 362.05),
    ("NVIDIA GeForce RTX 4090", ("RTX 4090",), ("4090 D",), 1008, 82.6, 165.2),
]


def lookup_spec(device_name):
    name = device_name.upper()
    for part, all_of, none_of, bw, fp32, fp16 in DEVICE_SPECS:
        if all(s.upper() in name for s in all_of) and not any(s.upper() in name for s in none_of):
            return {"name": part, "bw_gbps": bw, "fp32_tflops": fp32, "fp16_tflops": fp16}
    return None


def peak_compute_gflops(spec, dtype):
    return 1000.0 * (spec["fp16_tflops"] if dtype in ("f16", "bf16") else spec["fp32_tflops"])


LATENCY_FLOOR_MULTIPLE = 3.0  # stats.hpp: below 3 launch floors a kernel is launch / latency bound
OCCUPANCY_FRACTION = 0.30


def classify_bottleneck(median_us, launch_floor_us, bw_fraction, compute_fraction):
    if launch_floor_us > 0 and median_us < LATENCY_FLOOR_MULTIPLE * launch_floor_us:
        return "latency"
    if bw_fraction is None and compute_fraction is None:
        return ""
    bw, fl = bw_fraction or 0.0, compute_fraction or 0.0
    if bw < OCCUPANCY_FRACTION and fl < OCCUPANCY_FRACTION:
        return "occupancy"
    return "memory" if bw >= fl else "compute"


def derive_metrics(median_us, nbytes, flops, dtype, spec, measured_gbps=None, measured_gflops=None, launch_floor_us=0.0):
    """metrics {gbps, gflops, intensity, pct_peak_*, pct_measured_*, bottleneck}; percentages
    are None where no ceiling is known, as in the runner."""
    gbps = nbytes / median_us / 1e3 if median_us > 0 else 0.0  # bytes/us = MB/s; / 1e3 = GB/s
    gflops = flops / median_us / 1e3 if median_us > 0 else 0.0
    m = {"gbps": gbps, "gflops": gflops, "intensity": flops / nbytes if nbytes > 0 else None,
         "pct_peak_bw": None, "pct_peak_compute": None, "pct_measured_bw": None, "pct_measured_compute": None}
    if spec:
        m["pct_peak_bw"] = 100.0 * gbps / spec["bw_gbps"]
        m["pct_peak_compute"] = 100.0 * gflops / peak_compute_gflops(spec, dtype)
    if measured_gbps:
        m["pct_measured_bw"] = 100.0 * gbps / measured_gbps
    if measured_gflops:
        m["pct_measured_compute"] = 100.0 * gflops / measured_gflops
    bw = m["pct_measured_bw"] if m["pct_measured_bw"] is not None else m["pct_peak_bw"]
    fl = m["pct_measured_compute"] if m["pct_measured_compute"] is not None else m["pct_peak_compute"]
    m["bottleneck"] = classify_bottleneck(median_us, launch_floor_us, None if bw is None else bw / 100,
                                          None if fl is None else fl / 100)
    return m


DTYPE_SIZE = {"f32": 4, "f16": 2, "bf16": 2}


class Case:
    """One benchmark shape. `kind` selects the torch functions (see peers_for); the figures are
    the Iron declaration's: bytes moved and FLOPs as declared, tolerances per dtype, floor."""

    def __init__(self, kernel, bench, kind, dims, bytes_fn, flops, sweep, size, tol, floor=1.0, peer_only=False):
        self.kernel, self.bench, self.kind, self.dims = kernel, bench, kind, dims
        self.bytes_fn, self.flops, self.sweep, self.size = bytes_fn, flops, sweep, size
        self.tol, self.floor, self.peer_only = tol, floor, peer_only

    @property
    def name(self):
        return self.kernel + "/" + self.bench


BINARY_TOL = {"f32": 1e-6, "f16": 1e-3, "bf16": 8e-3}
UNARY_TOL = {"f32": 1e-5, "f16": 1.5e-3, "bf16": 8e-3}
RMSNORM_TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}
SOFTMAX_TOL = {"f32": 1e-5, "f16": 1.5e-3, "bf16": 8e-3}


def iron_cases(quick=False):
    """The IRON_BENCH declarations of kernels/ (names, shapes, bytes, FLOPs, sweeps), and the
    peer-only GEMMs. --quick shrinks every shape (a CPU smoke check), keeping the names."""
    cap = (lambda v, q: min(v, q)) if quick else (lambda v, q: v)
    cases = []
    for name, n in [("n4096", 4096), ("n262144", 1 << 18), ("n4m", 1 << 22), ("n16m", 1 << 24), ("n64m", 1 << 26)]:
        n = cap(n, 1 << 16)
        cases.append(Case("iron_add", name, "add", {"n": n}, lambda s, n=n: 3.0 * n * s, float(n), "iron_add", n,
                          BINARY_TOL))
    n = cap(1 << 24, 1 << 16)
    cases.append(Case("iron_mul", "n16m", "mul", {"n": n}, lambda s, n=n: 3.0 * n * s, float(n), "iron_mul", n, BINARY_TOL))
    for kernel, name, n, fpe in [("iron_exp", "t4096_h11008", 4096 * 11008, 1.0), ("iron_silu", "t1_h11008", 11008, 4.0),
                                 ("iron_silu", "t4096_h11008", 4096 * 11008, 4.0)]:
        n = cap(n, 1 << 16)
        kind = "exp" if kernel == "iron_exp" else "silu"
        cases.append(Case(kernel, name, kind, {"n": n}, lambda s, n=n: 2.0 * n * s, fpe * n, kernel, n, UNARY_TOL, 1e-4))
    for rows, d in [(1, 4096), (4096, 4096), (4096, 8192)]:
        r2, d2 = cap(rows, 8), cap(d, 4096)
        cases.append(Case("iron_rmsnorm", "rows%d_d%d" % (rows, d), "rmsnorm", {"rows": r2, "d": d2},
                          lambda s, r=r2, d=d2: (2.0 * r * d + d) * s, 4.0 * r2 * d2, "iron_rmsnorm_d%d" % d, r2,
                          RMSNORM_TOL))
    cases += memory_bound_cases(cap)
    # cuBLAS through F.linear: no Iron counterpart yet. Normwise error (floor = max |reference|).
    for m in (4096, 8192):
        m2 = cap(m, 256)
        cases.append(Case("gemm", "m%d_n%d_k%d" % (m, m, m), "gemm", {"m": m2, "n": m2, "k": m2},
                          lambda s, m=m2: 3.0 * m * m * s, 2.0 * m2 ** 3, "gemm_square", m2, {"bf16": 1e-2},
                          floor=None, peer_only=True))
    # Attention through F.scaled_dot_product_attention: no Iron counterpart yet (peer only), the
    # reference for a future Iron SDPA kernel. Prefill (32 heads x 4096 x 4096) and decode
    # (batch 8, one query against 4096 keys), head dim 128, not causal. Bytes: q, k, v, out once;
    # FLOPs: 4 b h sq skv d (two matmuls). Normwise error like the GEMMs.
    for name, b, h, sq, skv in [("prefill_b1_h32_s4096_d128", 1, 32, 4096, 4096),
                                ("decode_b8_h32_kv4096_d128", 8, 32, 1, 4096)]:
        sq2, skv2 = cap(sq, 128), cap(skv, 256)
        dims = {"b": b, "h": cap(h, 2), "sq": sq2, "skv": skv2, "d": 128}
        cases.append(Case("sdpa", name, "sdpa", dims,
                          lambda s, q=dims: (2.0 * q["b"] * q["h"] * q["sq"] * q["d"] + 2.0 * q["b"] * q["h"] * q["skv"] * q["d"]) * s,
                          4.0 * dims["b"] * dims["h"] * sq2 * skv2 * 128, "sdpa", skv2, {"bf16": 1e-2, "f16": 1e-2},
                          floor=None, peer_only=True))
    return cases


# The memory-bound library's benchmarks (issue 9), by the Iron family each kind is registered
# under and the bench names of its IRON_BENCH declarations.
FAMILIES = {
    "add": "iron_add", "mul": "iron_mul", "silu": "iron_silu", "gelu_tanh": "iron_gelu_tanh", "gelu_erf": "iron_gelu_erf",
    "swiglu": "iron_swiglu", "rmsnorm": "iron_rms_norm", "add_rmsnorm": "iron_residual_rms_norm", "layernorm": "iron_layer_norm",
    "softmax": "iron_softmax", "rope_neox": "iron_rope_neox", "argmax": "iron_argmax", "topk": "iron_topk",
    "gemv": "iron_gemv",
}
LAYERNORM_TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}
ROPE_TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}
GEMV_TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}
EXACT_F32 = {"f32": 0.0}


def memory_bound_cases(cap):
    """The issue-9 shapes: element-wise at 2^30 elements, the norms and softmax at their row
    shapes, RoPE NeoX, argmax / top-50 over a 128256 vocabulary, and decode GEMV."""
    f = FAMILIES
    out = []
    n = cap(1 << 30, 1 << 16)
    for kind, fpe, tol in [("add", 1.0, BINARY_TOL), ("mul", 1.0, BINARY_TOL)]:
        out.append(Case(f[kind], "n1g", kind, {"n": n}, lambda s, n=n: 3.0 * n * s, fpe * n, f[kind] + "_n", n,
                        {"bf16": tol["bf16"]}))
    for kind, fpe in [("silu", 4.0), ("gelu_tanh", 8.0), ("gelu_erf", 8.0)]:
        out.append(Case(f[kind], "n1g", kind, {"n": n}, lambda s, n=n: 2.0 * n * s, fpe * n, f[kind] + "_n", n,
                        {"bf16": UNARY_TOL["bf16"]}, 1e-4))
    for t, h in [(4096, 14336), (32768, 14336)]:
        t2, h2 = cap(t, 8), cap(h, 1024)
        out.append(Case(f["swiglu"], "t%d_h%d" % (t, h), "swiglu", {"rows": t2, "d": h2},
                        lambda s, r=t2, d=h2: 3.0 * r * d * s, 5.0 * t2 * h2, f["swiglu"] + "_h%d" % h, t2, UNARY_TOL, 1e-4))
    for rows, d in [(1, 4096), (32, 4096), (4096, 4096), (32768, 4096), (16384, 8192)]:
        r2, d2 = cap(rows, 8), cap(d, 4096)
        out.append(Case(f["rmsnorm"], "rows%d_d%d" % (rows, d), "rmsnorm", {"rows": r2, "d": d2},
                        lambda s, r=r2, d=d2: (2.0 * r * d + d) * s, 4.0 * r2 * d2, f["rmsnorm"] + "_d%d" % d, r2,
                        RMSNORM_TOL))
    for rows, d in [(4096, 4096), (32768, 4096)]:
        r2, d2 = cap(rows, 8), cap(d, 4096)
        out.append(Case(f["add_rmsnorm"], "rows%d_d%d" % (rows, d), "add_rmsnorm", {"rows": r2, "d": d2},
                        lambda s, r=r2, d=d2: (4.0 * r * d + d) * s, 5.0 * r2 * d2, f["add_rmsnorm"] + "_d%d" % d, r2,
                        RMSNORM_TOL))
        out.append(Case(f["layernorm"], "rows%d_d%d" % (rows, d), "layernorm", {"rows": r2, "d": d2},
                        lambda s, r=r2, d=d2: (2.0 * r * d + 2.0 * d) * s, 7.0 * r2 * d2, f["layernorm"] + "_d%d" % d, r2,
                        LAYERNORM_TOL))
    for rows, d in [(4096, 4096), (32768, 4096), (64, 128256)]:
        r2, d2 = cap(rows, 8), cap(d, 4096)
        out.append(Case(f["softmax"], "rows%d_d%d" % (rows, d), "softmax", {"rows": r2, "d": d2},
                        lambda s, r=r2, d=d2: 2.0 * r * d * s, 5.0 * r2 * d2, f["softmax"] + "_d%d" % d, r2, SOFTMAX_TOL, 1e-4))
    for t in (4096, 32768):
        t2 = cap(t, 8)
        out.append(Case(f["rope_neox"], "t%d_h32_d128" % t, "rope_neox", {"tokens": t2, "heads": 32, "dim": 128},
                        lambda s, t=t2: 2.0 * t * 32 * 128 * s + 2.0 * t * 64 * 4, 6.0 * t2 * 32 * 64, f["rope_neox"], t2,
                        ROPE_TOL))
    for rows in (1, 64):
        out.append(Case(f["argmax"], "rows%d_v128256" % rows, "argmax", {"rows": rows, "d": cap(128256, 4096)},
                        lambda s, r=rows: r * 128256 * 4.0 + r * 8.0, float(rows * 128256), f["argmax"], rows, EXACT_F32))
        out.append(Case(f["topk"], "rows%d_v128256_k50" % rows, "topk", {"rows": rows, "d": cap(128256, 4096), "k": 50},
                        lambda s, r=rows: r * 128256 * 4.0 + r * 50 * 12.0, float(rows * 128256), f["topk"], rows, EXACT_F32))
    for nn, k in [(14336, 4096), (4096, 14336), (10240, 320)]:
        n2, k2 = cap(nn, 512), cap(k, 512)
        out.append(Case(f["gemv"], "n%d_k%d" % (nn, k), "gemv", {"n": n2, "k": k2},
                        lambda s, n=n2, k=k2: (n * k + n + k) * s, 2.0 * n2 * k2, f["gemv"], n2, GEMV_TOL, floor=None))
    return out


def self_test():
    """Checks of the pure helpers; runs without torch (`--self-test`)."""
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s["n"] == 5 and s["min_us"] == 1.0 and s["median_us"] == 3.0 and s["mean_us"] == 3.0, s
    assert s["p95_us"] == 5.0 and s["p99_us"] == 5.0, s
    assert abs(s["cv"] - math.sqrt(2.5) / 3.0) < 1e-12, s
    s = summarize([4.0, 1.0, 3.0, 2.0])
    assert s["median_us"] == 2.5, s
    hundred = [float(i) for i in range(1, 101)]
    assert nearest_rank(hundred, 95) == 95.0 and nearest_rank(hundred, 99) == 99.0 and nearest_rank(hundred, 100) == 100.0
    assert nearest_rank([7.0], 50) == 7.0
    for bad in ([], [1.0, float("nan")]):
        try:
            summarize(bad)
            raise AssertionError("summarize accepted %r" % bad)
        except ValueError:
            pass
    assert summarize([2.0])["cv"] == 0.0
    spec = lookup_spec("NVIDIA H200")
    assert spec and spec["name"] == "NVIDIA H200 SXM" and spec["bw_gbps"] == 4800, spec
    assert lookup_spec("NVIDIA H200 NVL")["name"] == "NVIDIA H200 NVL"
    assert lookup_spec("NVIDIA GeForce RTX 4090 D") is None and lookup_spec("llvmpipe") is None
    # 3 * 2^24 f32 elements in 100 us: 2013 GB/s, 167.8 GFLOP/s; 41.9% of 4.8 TB/s.
    n = 1 << 24
    m = derive_metrics(100.0, 12.0 * n, float(n), "f32", spec, launch_floor_us=5.0)
    assert abs(m["gbps"] - 12.0 * n / 1e5) < 1e-9 and abs(m["gflops"] - n / 1e5) < 1e-9, m
    assert abs(m["intensity"] - 1 / 12.0) < 1e-12 and abs(m["pct_peak_bw"] - 100 * m["gbps"] / 4800) < 1e-9, m
    assert abs(m["pct_peak_compute"] - 100 * m["gflops"] / 67000) < 1e-9 and m["bottleneck"] == "memory", m
    assert derive_metrics(10.0, 1e6, 1e3, "bf16", spec, launch_floor_us=5.0)["bottleneck"] == "latency"
    assert derive_metrics(100.0, 1e3, 1e3, "bf16", spec)["bottleneck"] == "occupancy"
    unknown = derive_metrics(100.0, 1e9, 1e9, "f16", None)
    assert unknown["pct_peak_bw"] is None and unknown["bottleneck"] == "", unknown
    g = derive_metrics(200.0, 3 * 2.0 * 4096 ** 2, 2.0 * 4096 ** 3, "bf16", spec)  # 687 TFLOP/s
    assert abs(g["pct_peak_compute"] - 100 * g["gflops"] / 989500) < 1e-9 and g["bottleneck"] == "compute", g
    cases = iron_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)) == 16 + 28, names
    rope = next(c for c in cases if c.name == FAMILIES["rope_neox"] + "/t4096_h32_d128")
    assert rope.bytes_fn(2) == 2.0 * 4096 * 32 * 128 * 2 + 2.0 * 4096 * 64 * 4, rope.bytes_fn(2)
    gemv = next(c for c in cases if c.name == FAMILIES["gemv"] + "/n14336_k4096")
    assert gemv.bytes_fn(2) == (14336 * 4096 + 14336 + 4096) * 2 and gemv.floor is None
    sd = next(c for c in cases if c.name == "sdpa/prefill_b1_h32_s4096_d128")
    assert sd.peer_only and sd.flops == 4.0 * 32 * 4096 * 4096 * 128 and sd.bytes_fn(2) == 4.0 * 32 * 4096 * 128 * 2
    add = next(c for c in cases if c.name == "iron_add/n16m")
    assert add.bytes_fn(4) == 3.0 * (1 << 24) * 4 and add.flops == float(1 << 24) and add.sweep == "iron_add"
    rms = next(c for c in cases if c.name == "iron_rmsnorm/rows4096_d8192")
    assert rms.bytes_fn(2) == (2.0 * 4096 * 8192 + 8192) * 2 and rms.sweep == "iron_rmsnorm_d8192" and rms.size == 4096
    sm = next(c for c in cases if c.name == "iron_softmax/rows64_d128256")
    assert sm.flops == 5.0 * 64 * 128256 and sm.sweep == "iron_softmax_d128256" and sm.floor == 1e-4, sm.sweep
    silu = next(c for c in cases if c.name == "iron_silu/t4096_h11008")
    assert silu.flops == 4.0 * 4096 * 11008 and silu.bytes_fn(2) == 2.0 * 4096 * 11008 * 2
    quick = [c.name for c in iron_cases(quick=True)]
    assert quick == names, quick
    print("torch_peers self-test: all checks passed")
    return 0


# ---------------------------------------------------------------------------------------------
# Everything below needs torch.


def peers_for(case, torch, F, sources):
    """[(source, fn(inputs) -> output, message)] for a case; `compile` entries are compiled later."""
    eps = 1e-6
    if case.kind in ("add", "mul"):
        op = torch.add if case.kind == "add" else torch.mul
        eager = lambda a, b, out: op(a, b, out=out)  # resident output, as Iron's bench has
        fn = (lambda a, b: a + b) if case.kind == "add" else (lambda a, b: a * b)
        peers = [("torch-eager", eager, "torch.%s(out=)" % op.__name__), ("torch-compile", fn, "torch.compile")]
    elif case.kind == "exp":
        peers = [("torch-eager", lambda x, out: torch.exp(x, out=out), "torch.exp(out=)"),
                 ("torch-compile", lambda x: torch.exp(x), "torch.compile")]
    elif case.kind == "silu":
        peers = [("torch-eager", lambda x, out: F.silu(x), "F.silu"), ("torch-compile", lambda x: F.silu(x), "torch.compile")]
    elif case.kind == "rmsnorm":
        d = case.dims["d"]

        # Iron's arithmetic: f32 throughout, one rounding of the output.
        def formula(x, w):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)

        peers = [("torch-eager", lambda x, w, out: formula(x, w), "f32 formula, eager"),
                 ("torch-rms_norm", lambda x, w, out: F.rms_norm(x, (d,), w, eps), "F.rms_norm"),
                 ("torch-compile", formula, "torch.compile of the f32 formula")]
    elif case.kind == "softmax":
        peers = [("torch-eager", lambda x, out: torch.softmax(x, dim=-1), "torch.softmax"),
                 ("torch-compile", lambda x: torch.softmax(x, dim=-1), "torch.compile")]
    elif case.kind in ("gelu_tanh", "gelu_erf"):
        approx = "tanh" if case.kind == "gelu_tanh" else "none"
        peers = [("torch-eager", lambda x, out: F.gelu(x, approximate=approx), "F.gelu(approximate=%r)" % approx),
                 ("torch-compile", lambda x: F.gelu(x, approximate=approx), "torch.compile")]
    elif case.kind == "swiglu":
        peers = [("torch-eager", lambda a, b, out: F.silu(a) * b, "F.silu(a) * b"),
                 ("torch-compile", lambda a, b: F.silu(a) * b, "torch.compile")]
    elif case.kind == "add_rmsnorm":
        d = case.dims["d"]

        def fused(x, r, w):
            h = x + r
            return h, F.rms_norm(h, (d,), w, eps)

        peers = [("torch-rms_norm", lambda x, r, w, out: fused(x, r, w), "x + r, then F.rms_norm"),
                 ("torch-compile", fused, "torch.compile")]
    elif case.kind == "layernorm":
        d = case.dims["d"]
        peers = [("torch-layer_norm", lambda x, w, b, out: F.layer_norm(x, (d,), w, b, 1e-5), "F.layer_norm"),
                 ("torch-compile", lambda x, w, b: F.layer_norm(x, (d,), w, b, 1e-5), "torch.compile")]
    elif case.kind == "rope_neox":
        def rope(x, c, s):
            half = x.shape[-1] // 2
            xf = x.float()
            x1, x2 = xf[..., :half], xf[..., half:]
            c, s = c[:, None, :], s[:, None, :]
            return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(x.dtype)

        peers = [("torch-eager", lambda x, c, s, out: rope(x, c, s), "f32 formula, eager"),
                 ("torch-compile", rope, "torch.compile")]
    elif case.kind == "argmax":
        peers = [("torch-eager", lambda x, out: torch.argmax(x, dim=-1), "torch.argmax"),
                 ("torch-compile", lambda x: torch.argmax(x, dim=-1), "torch.compile")]
    elif case.kind == "topk":
        k = case.dims["k"]
        peers = [("torch-eager", lambda x, out: torch.topk(x, k, dim=-1).values, "torch.topk (values compared)"),
                 ("torch-compile", lambda x: torch.topk(x, k, dim=-1).values, "torch.compile")]
    elif case.kind == "gemv":
        peers = [("cublas", lambda w, x, out: F.linear(x[None, :], w)[0], "F.linear (cuBLAS)"),
                 ("torch-mv", lambda w, x, out: torch.mv(w, x), "torch.mv")]
    elif case.kind == "gemm":
        peers = [("cublas", lambda a, w, out: F.linear(a, w), "F.linear (cuBLAS); peer only: no Iron kernel yet")]
    elif case.kind == "sdpa":
        peers = [("torch-sdpa", lambda q, k, v, out: F.scaled_dot_product_attention(q, k, v),
                  "F.scaled_dot_product_attention; peer only: no Iron kernel yet")]
    else:
        raise ValueError(case.kind)
    peers += triton_peers(case, eps)
    return [p for p in peers if not sources or p[0] in sources]


def triton_peers(case, eps):
    """The Triton kernels of triton_kernels.py for a case (imported on first use)."""
    try:
        import triton_kernels as tk
    except ImportError:
        return []
    k = case.kind
    how = "Triton (bench/peers/triton_kernels.py)"
    table = {
        "add": lambda a, b, out: tk.binary(a, b, "add"), "mul": lambda a, b, out: tk.binary(a, b, "mul"),
        "swiglu": lambda a, b, out: tk.binary(a, b, "swiglu"),
        "exp": lambda x, out: tk.unary(x, "exp"), "silu": lambda x, out: tk.unary(x, "silu"),
        "gelu_tanh": lambda x, out: tk.unary(x, "gelu_tanh"), "gelu_erf": lambda x, out: tk.unary(x, "gelu_erf"),
        "rmsnorm": lambda x, w, out: tk.rmsnorm(x, w, eps),
        "add_rmsnorm": lambda x, r, w, out: tk.rmsnorm(x, w, eps, residual=r),
        "layernorm": lambda x, w, b, out: tk.layernorm(x, w, b, 1e-5),
        "softmax": lambda x, out: tk.softmax(x),
        "rope_neox": lambda x, c, s, out: tk.rope_neox(x, c, s),
        "argmax": lambda x, out: tk.argmax(x),
        "gemv": lambda w, x, out: tk.gemv(w, x),
    }
    return [("triton", table[k], how)] if k in table else []


def make_inputs(case, dtype, torch, device):
    """Bounded, deterministic inputs in the Iron fixtures' ranges, rounded to the dtype once;
    the float64 reference is computed from the rounded values."""
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator(device=device)
    g.manual_seed(1234)

    def uniform(shape, lo, hi):
        return (torch.rand(shape, generator=g, device=device, dtype=torch.float32) * (hi - lo) + lo).to(tdt)

    k, dims = case.kind, case.dims
    if k in ("add", "mul"):
        ins = [uniform((dims["n"],), -4, 4), uniform((dims["n"],), -4, 4)]
        out_shape = (dims["n"],)
    elif k in ("exp", "silu"):
        ins, out_shape = [uniform((dims["n"],), -8, 8)], (dims["n"],)
    elif k == "rmsnorm":
        ins = [uniform((dims["rows"], dims["d"]), -2, 2), uniform((dims["d"],), 0.5, 1.5)]
        out_shape = (dims["rows"], dims["d"])
    elif k == "softmax":
        ins, out_shape = [uniform((dims["rows"], dims["d"]), -4, 4)], (dims["rows"], dims["d"])
    elif k in ("gelu_tanh", "gelu_erf"):
        ins, out_shape = [uniform((dims["n"],), -8, 8)], (dims["n"],)
    elif k == "swiglu":
        ins = [uniform((dims["rows"], dims["d"]), -8, 8), uniform((dims["rows"], dims["d"]), -4, 4)]
        out_shape = (dims["rows"], dims["d"])
    elif k == "add_rmsnorm":
        ins = [uniform((dims["rows"], dims["d"]), -2, 2), uniform((dims["rows"], dims["d"]), -2, 2),
               uniform((dims["d"],), 0.5, 1.5)]
        out_shape = (dims["rows"], dims["d"])
    elif k == "layernorm":
        ins = [uniform((dims["rows"], dims["d"]), -2, 2), uniform((dims["d"],), 0.5, 1.5), uniform((dims["d"],), -0.5, 0.5)]
        out_shape = (dims["rows"], dims["d"])
    elif k == "rope_neox":
        t, h, d = dims["tokens"], dims["heads"], dims["dim"]
        pos = torch.arange(t, device=device, dtype=torch.float64)[:, None]
        inv = 10000.0 ** (-torch.arange(0, d // 2, device=device, dtype=torch.float64) * 2.0 / d)
        ang = pos * inv[None, :]
        ins = [uniform((t, h, d), -2, 2), torch.cos(ang).float(), torch.sin(ang).float()]
        out_shape = (t, h, d)
    elif k in ("argmax", "topk"):
        x = torch.rand((dims["rows"], dims["d"]), generator=g, device=device, dtype=torch.float32) * 32 - 16
        ins, out_shape = [x], (dims["rows"],)
    elif k == "gemv":
        ins = [uniform((dims["n"], dims["k"]), -1, 1), uniform((dims["k"],), -1, 1)]
        out_shape = (dims["n"],)
    elif k == "sdpa":
        qs, ks = (dims["b"], dims["h"], dims["sq"], dims["d"]), (dims["b"], dims["h"], dims["skv"], dims["d"])
        ins = [uniform(qs, -1, 1), uniform(ks, -1, 1), uniform(ks, -1, 1)]
        out_shape = qs
    else:
        ins = [uniform((dims["m"], dims["k"]), -1, 1), uniform((dims["n"], dims["k"]), -1, 1)]
        out_shape = (dims["m"], dims["n"])
    return ins, torch.empty(out_shape, dtype=tdt, device=device)


def reference(case, ins, torch):
    x = [t.double() for t in ins]
    k = case.kind
    if k == "add":
        return x[0] + x[1]
    if k == "mul":
        return x[0] * x[1]
    if k == "exp":
        return torch.exp(x[0])
    if k == "silu":
        return x[0] / (1 + torch.exp(-x[0]))
    if k == "rmsnorm":
        eps = float(torch.tensor(1e-6, dtype=torch.float32))  # the f32 eps the kernels add
        return x[0] / torch.sqrt(x[0].pow(2).mean(-1, keepdim=True) + eps) * x[1]
    if k == "softmax":
        return torch.softmax(x[0], dim=-1)
    if k == "gelu_tanh":
        return 0.5 * x[0] * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x[0] + 0.044715 * x[0] ** 3)))
    if k == "gelu_erf":
        return 0.5 * x[0] * (1 + torch.erf(x[0] / math.sqrt(2)))
    if k == "swiglu":
        return x[0] / (1 + torch.exp(-x[0])) * x[1]
    if k == "add_rmsnorm":
        eps = float(torch.tensor(1e-6, dtype=torch.float32))
        h = (ins[0].float() + ins[1].float()).to(ins[0].dtype).double()  # h is stored in the dtype
        return (h, h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + eps) * x[2])
    if k == "layernorm":
        mean = x[0].mean(-1, keepdim=True)
        var = (x[0] - mean).pow(2).mean(-1, keepdim=True)
        return (x[0] - mean) / torch.sqrt(var + 1e-5) * x[1] + x[2]
    if k == "rope_neox":
        half = x[0].shape[-1] // 2
        x1, x2 = x[0][..., :half], x[0][..., half:]
        c, s = x[1][:, None, :], x[2][:, None, :]
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
    if k == "argmax":
        return torch.argmax(x[0], dim=-1).double()
    if k == "topk":
        return torch.topk(x[0], case.dims["k"], dim=-1).values
    if k == "gemv":
        return x[0] @ x[1]
    if k == "sdpa":
        scores = x[0] @ x[1].transpose(-1, -2) / (x[0].shape[-1] ** 0.5)
        return torch.softmax(scores, dim=-1) @ x[2]
    return x[0] @ x[1].T


def max_error(out, ref, floor, torch):
    """Iron's metric: max |out - ref| / max(floor, |ref|); floor None: normwise (max |ref|).
    Several outputs (a fused residual + norm): the largest error over them."""
    if isinstance(ref, tuple):
        return max(max_error(o, r, floor, torch) for o, r in zip(out, ref))
    o = out.double()
    if floor is None:
        floor = float(ref.abs().max())
    return float(((o - ref).abs() / ref.abs().clamp(min=floor)).max())


class Timer:
    def __init__(self, torch, device, flush_l2, flush_bytes, flush_read=False):
        self.torch, self.device = torch, device
        self.cuda = device.startswith("cuda")
        # Writing a buffer far larger than L2 (50 MiB on H200) between samples evicts the inputs,
        # but leaves the L2 full of dirty lines that are written back during the timed call.
        # flush_read: read it instead (a sum of it; only the scalar result is written), which
        # leaves the L2 holding clean lines, as `iron bench --flush-l2-read` does.
        self.flush_read = bool(flush_read)
        want = flush_l2 or self.flush_read
        self.flush = torch.zeros(flush_bytes // 4, dtype=torch.float32, device=device) if want else None

    def evict(self):
        if self.flush is None:
            return
        if self.flush_read:
            self.flush.sum()
        else:
            self.flush.zero_()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def run(self, fn, warmup, samples):
        for _ in range(warmup):
            fn()
        self.sync()
        if not self.cuda:  # CPU ops are synchronous: the host clock brackets each one
            out = []
            for _ in range(samples):
                self.evict()
                t0 = time.perf_counter_ns()
                fn()
                out.append((time.perf_counter_ns() - t0) / 1e3)
            return out
        ev = [(self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)) for _ in range(samples)]
        for start, end in ev:
            self.evict()
            start.record()
            fn()
            end.record()
        self.sync()
        return [start.elapsed_time(end) * 1e3 for start, end in ev]  # ms -> us


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="snapshot file to write (JSON); required unless --self-test")
    ap.add_argument("--name", default="torch-peers", help="snapshot name recorded in the file")
    ap.add_argument("--samples", type=int, default=100, help="timed samples per case and source (default 100)")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up calls before timing (at least 20)")
    ap.add_argument("--filter", default="", help="only cases whose kernel/bench name contains this text (or one of several, comma-separated)")
    ap.add_argument("--dtype", choices=sorted(DTYPE_SIZE), help="only this dtype")
    ap.add_argument("--sources", default="", help="comma-separated subset: torch-eager,torch-compile,torch-rms_norm,"
                    "torch-layer_norm,cublas,torch-mv,torch-sdpa,triton")
    ap.add_argument("--flush-l2", action="store_true", help="write a 256 MiB buffer before every sample")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (smoke check)")
    ap.add_argument("--quick", action="store_true", help="small shapes, 10 samples: a smoke check, not a measurement")
    ap.add_argument("--measured-gbps", type=float, help="measured bandwidth ceiling for pct_measured_bw")
    ap.add_argument("--self-test", action="store_true", help="check the statistics helpers (no torch needed) and exit")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.out:
        ap.error("--out is required")
    if args.warmup < 20:
        ap.error("--warmup must be at least 20 (engineering guide §6.2)")
    samples = 10 if args.quick and args.samples == 100 else args.samples
    if samples < 1:
        ap.error("--samples must be positive")

    try:  # only here: the helpers above run without torch
        import torch
        import torch.nn.functional as F
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # triton_kernels.py, beside this file
    except ImportError as e:
        print("torch_peers: PyTorch is not importable here (%s); --self-test runs without it" % e, file=sys.stderr)
        return 2

    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("torch_peers: CUDA is not available (use --device cpu --quick for a smoke check)", file=sys.stderr)
        return 2
    device_name = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "cpu (torch)"
    backend = "cuda" if device.startswith("cuda") else "cpu"
    spec = lookup_spec(device_name) if backend == "cuda" else None
    sources = set(s for s in args.sources.split(",") if s)
    flush_bytes = (256 << 20) if not args.quick else (16 << 20)
    timer = Timer(torch, device, args.flush_l2, flush_bytes)

    # The launch floor (a 1-element eager op): medians under 3x it are launch bound.
    tiny = torch.zeros(1, device=device)
    floor_us = summarize(timer.run(lambda: tiny.add_(1), 20, 50))["median_us"]
    print("torch_peers: %s (%s), torch %s, launch floor %.2f us%s" % (device_name, backend, torch.__version__, floor_us,
          ", spec " + spec["name"] if spec else ", no datasheet entry"), file=sys.stderr)

    results, started = [], time.time()
    for case in iron_cases(args.quick):
        if args.filter and not any(f and f in case.name for f in args.filter.split(",")):
            continue
        for dtype in sorted(case.tol, key=["f32", "f16", "bf16"].index):
            if args.dtype and dtype != args.dtype:
                continue
            ins, out, ref = None, None, None
            try:
                ins, out = make_inputs(case, dtype, torch, device)
                ref = reference(case, ins, torch)
            except Exception as e:  # e.g. out of memory: every source of this case errors
                setup_error = "%s: %s" % (type(e).__name__, e)
            else:
                setup_error = None
            for source, fn, how in peers_for(case, torch, F, sources):
                rec = {"kernel": case.kernel, "bench": case.bench, "dtype": dtype, "backend": backend, "device": device_name,
                       "source": source, "status": "error", "message": how + (" (quick: reduced shape)" if args.quick else ""),
                       "correctness": None, "warmup": args.warmup, "flush_l2": args.flush_l2, "samples_us": [],
                       "stats": None, "bytes": case.bytes_fn(DTYPE_SIZE[dtype]), "flops": case.flops, "sweep": case.sweep,
                       "size": case.size, "metrics": None, "resources": None}
                t0 = time.time()
                call = compiled = None
                try:
                    if setup_error:
                        raise RuntimeError(setup_error)
                    if source == "torch-compile":
                        torch._dynamo.reset()  # one compile per case: never hit the recompile limit
                        compiled = torch.compile(fn, fullgraph=True, dynamic=False)
                        call = lambda c=compiled, a=ins: c(*a)
                    else:
                        call = lambda f=fn, a=ins, o=out: f(*a, o)
                    result = call()  # compiles, for torch.compile
                    if timer.cuda:
                        torch.cuda.synchronize()
                    err = max_error(result, ref, case.floor, torch)
                    tol = case.tol[dtype]
                    ok = math.isfinite(err) and err <= tol
                    rec["correctness"] = {"status": "pass" if ok else "fail", "max_error": err if math.isfinite(err) else None,
                                          "tolerance": tol}
                    del result
                    if not ok:  # §6.1: a fast wrong answer is not timed
                        rec["status"] = "fail"
                        rec["message"] = "%s: max error %.3g > tolerance %.3g" % (how, err, tol)
                    else:
                        s = timer.run(call, args.warmup, samples)
                        st = summarize(s)
                        rec.update({"status": "ok", "samples_us": s, "stats": st,
                                    "metrics": derive_metrics(st["median_us"], rec["bytes"], rec["flops"], dtype, spec,
                                                              args.measured_gbps, None, floor_us)})
                except Exception as e:
                    rec["status"] = "error"
                    rec["message"] = "%s: %s: %s" % (how, type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                results.append(rec)
                line = "%-4s %-30s %-5s %-15s" % ("ok" if rec["status"] == "ok" else rec["status"].upper(), case.name, dtype,
                                                 source)
                if rec["status"] == "ok":
                    line += " median %10.3f us  min %10.3f us  %7.1f GB/s" % (rec["stats"]["median_us"],
                                                                          rec["stats"]["min_us"], rec["metrics"]["gbps"])
                else:
                    line += " " + rec["message"]
                print(line + "  (%.1f s)" % (time.time() - t0), file=sys.stderr)
                call = compiled = None  # drop this case's tensors before the next allocates its own
            ins = out = ref = None
            if timer.cuda:
                torch.cuda.empty_cache()

    snap = {"v": PROTOCOL_VERSION, "name": args.name,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "results": results}
    tmp = args.out + ".tmp.%d" % os.getpid()  # atomic: never half a file
    with open(tmp, "w") as f:
        json.dump(snap, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    bad = sum(r["status"] != "ok" for r in results)
    print("torch_peers: wrote %d results to %s in %.0f s (%d not ok)" % (len(results), args.out, time.time() - started, bad),
          file=sys.stderr)
    return 1 if bad or not results else 0


if __name__ == "__main__":
    sys.exit(main())
