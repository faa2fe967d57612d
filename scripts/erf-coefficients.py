#!/usr/bin/env python3
"""Prints the f32 coefficients of Iron's GLSL erf (src/codegen/glsl_math.inc) and the largest
error of that evaluation (simulated in f32, every product and sum rounded) against Python's
double erf over 250,000 sample points.

erf(x) = x * S(x^2) for |x| < 0.5, with S the degree-6 Chebyshev interpolant of erf(sqrt(u)) / sqrt(u)
on u in [0, 0.25]; erf(x) = 1 - E_i(|x| - mid_i) on the pieces [0.5, 1.75), [1.75, 3), [3, 3.9375),
with E_i the degree-10 Chebyshev interpolant of erfc on the piece; 1 beyond (erf rounds to 1 in
f32 from 3.9192 on). Usage: python3 scripts/erf-coefficients.py
"""
import math
import random
import struct


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def bits(v):
    return struct.unpack("I", struct.pack("f", v))[0]


def chebyshev(f, lo, hi, degree):
    """Monomial coefficients, in t = x - mid, of the Chebyshev interpolant of f on [lo, hi]."""
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    n = degree + 1
    nodes = [math.cos(math.pi * (k + 0.5) / n) for k in range(n)]
    values = [f(mid + half * s) for s in nodes]
    c = [2.0 / n * sum(values[k] * math.cos(math.pi * j * (k + 0.5) / n) for k in range(n)) for j in range(n)]
    c[0] /= 2
    t = [[1.0], [0.0, 1.0]]
    for j in range(2, n):
        a = [0.0] + [2 * v for v in t[j - 1]]
        b = t[j - 2] + [0.0] * (len(a) - len(t[j - 2]))
        t.append([a[i] - b[i] for i in range(len(a))])
    mono = [0.0] * n
    for j in range(n):
        for i, v in enumerate(t[j]):
            mono[i] += c[j] * v
    return mid, [mono[i] / half**i for i in range(n)]


def horner(coefficients, t):
    r = f32(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        r = f32(f32(r * t) + f32(c))
    return r


SPLIT = 0.5
EDGES = [0.5, 1.75, 3.0, 3.9375]


def small_coefficients():
    def g(u):
        return math.erf(math.sqrt(u)) / math.sqrt(u) if u > 0 else 2 / math.sqrt(math.pi)

    mid, c = chebyshev(g, 0.0, SPLIT * SPLIT, 6)
    mono = [0.0] * len(c)
    for i, v in enumerate(c):  # re-expand around u = 0
        for k in range(i + 1):
            mono[k] += v * math.comb(i, k) * (-mid) ** (i - k)
    return [f32(v) for v in mono]


def pieces():
    out = []
    for lo, hi in zip(EDGES, EDGES[1:]):
        mid, c = chebyshev(math.erfc, lo, hi, 10)
        out.append((lo, hi, f32(mid), [f32(v) for v in c]))
    return out


def erf32(x, small, parts):
    a = abs(x)
    if a < SPLIT:
        return f32(x * horner(small, f32(x * x)))
    for lo, hi, mid, c in parts:
        if a < hi:
            return math.copysign(f32(1.0 - horner(c, f32(a - mid))), x)
    return math.copysign(1.0, x)


def main():
    small, parts = small_coefficients(), pieces()
    print("small:", ", ".join("0x%08xu" % bits(c) for c in small))
    for lo, hi, mid, c in parts:
        print("[%g, %g) mid %r (0x%08x):" % (lo, hi, mid, bits(mid)), ", ".join("0x%08xu" % bits(v) for v in c))
    rng = random.Random(1)
    xs = [rng.uniform(0, 4) for _ in range(200000)]
    xs += [math.ldexp(rng.random() + 0.5, -rng.randint(1, 60)) for _ in range(50000)]
    worst_abs, worst_ulp = 0.0, 0
    for x in xs:
        x = f32(x)
        got, want = erf32(x, small, parts), math.erf(x)
        worst_abs = max(worst_abs, abs(got - want))
        worst_ulp = max(worst_ulp, abs(bits(got) - bits(f32(want))))
    print("largest error: %.3g absolute, %d ulp from the rounded erf" % (worst_abs, worst_ulp))


if __name__ == "__main__":
    main()
