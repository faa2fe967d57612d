#!/usr/bin/env python3
"""A picture check of `iron report`: writes a small synthetic snapshot (Iron and peer results on
one device, two sweeps), renders the report with headless Chromium, and verifies from the PNG
(decoded here with zlib: no extra packages) that the charts really drew. A negative control
renders the same page with a Chart.js that does nothing and must be judged blank.

Usage: check_report.py PATH/TO/iron [WORKDIR]   (needs `chromium`: scripts/install-deps.sh)
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

# Thresholds: a drawn roofline (points in several palette colours and roof lines) and two sweep
# charts leave tens of thousands of coloured pixels at 1200x1600; text, table borders and a
# blank canvas leave almost none (the negative control measures it).
MIN_CHROMATIC_PIXELS = 3000
MIN_CHROMATIC_COLOURS = 4


def synthetic_snapshot():
    """Iron and peer records as the runner and torch_peers.py write them (protocol.hpp)."""
    results = []
    device = "NVIDIA H200"
    peak_bw, peak_f32, peak_16 = 4800.0, 67000.0, 989500.0

    def record(kernel, bench, dtype, source, median, nbytes, flops, sweep, size):
        samples = [median * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30)]
        gbps, gflops = nbytes / median / 1e3, flops / median / 1e3
        peak_c = peak_f32 if dtype == "f32" else peak_16
        return {
            "kernel": kernel, "bench": bench, "dtype": dtype, "backend": "cuda", "device": device, "source": source,
            "status": "ok", "message": "", "correctness": {"status": "pass", "max_error": 1e-7, "tolerance": 1e-6},
            "warmup": 20, "flush_l2": True, "samples_us": samples,
            "stats": {"n": 30, "min_us": min(samples), "median_us": median, "mean_us": median, "p95_us": max(samples),
                      "p99_us": max(samples), "cv": 0.012},
            "bytes": nbytes, "flops": flops, "sweep": sweep, "size": size,
            "metrics": {"gbps": gbps, "gflops": gflops, "intensity": flops / nbytes,
                        "pct_peak_bw": 100 * gbps / peak_bw, "pct_peak_compute": 100 * gflops / peak_c,
                        "pct_measured_bw": None, "pct_measured_compute": None, "bottleneck": "memory"},
            "resources": None,
        }

    for n, name in [(4096, "n4096"), (1 << 18, "n262144"), (1 << 22, "n4m"), (1 << 24, "n16m"), (1 << 26, "n64m")]:
        for dtype, size in [("f32", 4), ("bf16", 2)]:
            nbytes = 3.0 * n * size
            floor = 2.5
            for source, eff in [("iron", 0.85), ("torch-eager", 0.80), ("torch-compile", 0.83)]:
                med = max(floor, nbytes / (eff * peak_bw * 1e3)) + (5.0 if source == "torch-eager" else 0.0)
                results.append(record("iron_add", name, dtype, source, med, nbytes, float(n), "iron_add", n))
    for rows in [1, 4096]:
        d = 4096
        for source, eff in [("iron", 0.7), ("torch-rms_norm", 0.75), ("torch-compile", 0.8)]:
            nbytes = (2.0 * rows * d + d) * 2
            med = max(3.0, nbytes / (eff * peak_bw * 1e3))
            results.append(record("iron_rmsnorm", "rows%d_d4096" % rows, "bf16", source, med, nbytes, 4.0 * rows * d,
                                  "iron_rmsnorm_d4096", rows))
    for m in [4096, 8192]:
        flops, nbytes = 2.0 * m ** 3, 2.0 * 3 * m * m
        rec = record("gemm", "m%d_n%d_k%d" % (m, m, m), "bf16", "cublas", flops / (0.7 * peak_16 * 1e3), nbytes, flops,
                     "gemm_square", m)
        rec["message"] = "peer only: no Iron kernel yet"
        results.append(rec)
    fail = record("iron_softmax", "rows64_d128256", "f16", "iron", 10.0, 1.0, 1.0, "", 0)
    fail.update({"status": "fail", "message": "max error 3e-2 > tolerance 1.5e-3", "samples_us": [], "stats": None,
                 "metrics": None})
    results.append(fail)
    return {"v": 1, "name": "synthetic", "created": "2026-11-29T00:00:00Z", "results": results}


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s: not a PNG" % path)
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError("unsupported PNG: depth %d colour type %d interlace %d" % (depth, colour, interlace))
            bpp = 3 if colour == 2 else 4
        elif ctype == b"IDAT":
            idat += chunk
        elif ctype == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):  # undo the PNG filter of this scanline (RFC 2083 §6)
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def measure(path):
    """Pixels that are neither white nor grey (text, borders) and their distinct colours."""
    width, height, bpp, rows = read_png(path)
    chromatic, colours, non_white = 0, set(), 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if r < 250 or g < 250 or b < 250:
                non_white += 1
            if max(r, g, b) - min(r, g, b) > 60:  # saturated: only the charts' palette is
                chromatic += 1
                colours.add((r >> 4, g >> 4, b >> 4))
    return {"size": (width, height), "non_white": non_white, "chromatic": chromatic, "colours": len(colours)}


def screenshot(html, png, profile):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("check_report: chromium not found (run scripts/install-deps.sh)")
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--user-data-dir=" + profile,
           "--screenshot=" + png, "--window-size=1200,1600", "file://" + os.path.abspath(html)]
    subprocess.run(cmd, check=True, timeout=180, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(png):
        raise SystemExit("check_report: chromium wrote no screenshot")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    iron = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="iron-report-")
    os.makedirs(work, exist_ok=True)
    snap = os.path.join(work, "synthetic.json")
    with open(snap, "w") as f:
        json.dump(synthetic_snapshot(), f)
    failures = []

    html = os.path.join(work, "report.html")
    subprocess.run([iron, "report", snap, "-o", html], check=True)
    text = open(html, encoding="utf-8").read()
    # Self-contained: no external script, stylesheet or image may be referenced.
    for needle in ('src="http', "src='http", 'href="http', "href='http", "<script src", "@import", "url(http"):
        if needle in text:
            failures.append("report references the network: %r" % needle)
    if "Chart.js v" not in text:
        failures.append("Chart.js is not inlined")
    for needle in ("iron_add/n64m", "gemm/m8192_n8192_k8192", "torch-compile", "peer only", "max error 3e-2"):
        if needle not in text:
            failures.append("the results table lacks %r" % needle)

    png = os.path.join(work, "report.png")
    screenshot(html, png, os.path.join(work, "profile"))
    m = measure(png)
    print("report.png: %dx%d, %d non-white pixels, %d chromatic pixels in %d colours"
          % (m["size"][0], m["size"][1], m["non_white"], m["chromatic"], m["colours"]))
    if m["chromatic"] < MIN_CHROMATIC_PIXELS or m["colours"] < MIN_CHROMATIC_COLOURS:
        failures.append("the charts did not draw (%d chromatic pixels in %d colours; need %d and %d)"
                        % (m["chromatic"], m["colours"], MIN_CHROMATIC_PIXELS, MIN_CHROMATIC_COLOURS))

    # Negative control: the same report with a Chart.js that defines nothing must measure blank,
    # or the check above proves nothing.
    stub = os.path.join(work, "stub-chart.js")
    with open(stub, "w") as f:
        f.write("/* Chart.js v0 stub: draws nothing */\n")
    blank_html = os.path.join(work, "blank.html")
    subprocess.run([iron, "report", snap, "-o", blank_html, "--chartjs", stub], check=True, stdout=subprocess.DEVNULL)
    blank_png = os.path.join(work, "blank.png")
    screenshot(blank_html, blank_png, os.path.join(work, "profile-blank"))
    b = measure(blank_png)
    print("blank.png (negative control): %d non-white pixels, %d chromatic pixels in %d colours"
          % (b["non_white"], b["chromatic"], b["colours"]))
    if b["chromatic"] >= MIN_CHROMATIC_PIXELS:
        failures.append("the negative control passed the picture check: the thresholds are too low")

    for f in failures:
        print("FAIL: " + f)
    print("check_report: %s (files in %s)" % ("ok" if not failures else "FAILED", work))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
