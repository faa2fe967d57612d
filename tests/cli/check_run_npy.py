#!/usr/bin/env python3
"""`iron run` on the user's data, end to end, with NumPy writing the inputs and reading the
outputs (so the .npy files are NumPy's own, not a reimplementation's).

  check_run_npy.py IRON WORKDIR [--backends interp,vulkan]

Runs a family through its selector (RMSNorm, f16, inputs in f64 and f32, converted) and a kernel
with an explicit launch (iron_add, f32) on each backend named (CI: the interpreter and lavapipe;
on the GPU machine: --backends cuda,vulkan), checks the outputs against NumPy, and checks that
every kind of bad input exits 2 with a clear message and leaves no output file behind (an
existing file keeps its content).
"""
import os
import shutil
import subprocess
import sys

import numpy as np

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(iron, args, cwd):
    env = dict(os.environ, IRON_NO_REBUILD="1")
    p = subprocess.run([iron] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


def main():
    iron, work = os.path.abspath(sys.argv[1]), sys.argv[2]
    backends = ["interp", "vulkan"]
    if len(sys.argv) > 4 and sys.argv[3] == "--backends":
        backends = sys.argv[4].split(",")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = np.random.default_rng(7)

    # 1. A family through its selector: RMSNorm at f16 on 3 rows of 64, x in f64, w in f32.
    rows, d, eps = 3, 64, 1e-6
    x = rng.uniform(-2, 2, size=(rows, d))
    w = rng.uniform(0.5, 1.5, size=(d,)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "w.npy"), w)
    for backend in backends:
        outdir = "norm_" + backend
        rc, out, err = run(iron, ["run", "iron_rms_norm", "--dtype", "f16", "--backend", backend, "rows=%d" % rows,
                                  "d=%d" % d, "eps=%g" % eps, "x=x.npy", "w=w.npy", "-o", outdir], work)
        check(rc == 0, "rms_norm on %s exits 0 (rc %d)\n%s%s" % (backend, rc, out, err))
        check("x <- x.npy: f64 (3, 64) converted to f16 (rounded to nearest even;" in err,
              "the input conversion is stated on stderr:\n" + err)
        check("w <- w.npy: f32 (64,) converted to f16" in err, "w's conversion is stated")
        check("out -> %s/out.npy: f16 (3, 64)" % outdir in err, "the output file is stated:\n" + err)
        check("plan iron_rms_norm [f16]" in out, "the selector's plan is printed")
        if rc != 0:
            continue
        got = np.load(os.path.join(work, outdir, "out.npy"))
        check(got.dtype == np.float16 and got.shape == (rows, d), "out.npy is f16 of shape (3, 64): %s %s" % (got.dtype, got.shape))
        xh, wh = x.astype(np.float16).astype(np.float64), w.astype(np.float16).astype(np.float64)
        want = xh / np.sqrt((xh * xh).mean(axis=1, keepdims=True) + eps) * wh
        spacing = np.spacing(np.maximum(np.abs(want), 1.0).astype(np.float16)).astype(np.float64)
        err_ulps = np.abs(got.astype(np.float64) - want) / spacing
        check(err_ulps.max() <= 2, "RMSNorm on %s within 2 f16 ulps of NumPy's (max %.2f)" % (backend, err_ulps.max()))

    # 2. A kernel with an explicit launch, f32, exact: on the interpreter and on lavapipe.
    n = 1000
    a = rng.uniform(-4, 4, size=n).astype(np.float32)
    b = rng.uniform(-4, 4, size=n).astype(np.float32)
    np.save(os.path.join(work, "a.npy"), a)
    np.save(os.path.join(work, "b.npy"), b)
    for backend in backends:
        name = "sum_%s.npy" % backend
        # --out before the positionals: it takes one value, the rest stay positionals.
        rc, out, err = run(iron, ["run", "iron_add", "--dtype", "f32", "--backend", backend, "--grid", "1", "--tg", "256",
                                  "--out", "out=" + name, "n=%d" % n, "a=a.npy", "b=b.npy"], work)
        check(rc == 0, "iron_add on %s exits 0 (rc %d)\n%s%s" % (backend, rc, out, err))
        check("a <- a.npy: f32 (1000,), as it is" in err, "an input of the parameter's own type is taken as it is:\n" + err)
        if rc == 0:
            s = np.load(os.path.join(work, name))
            check(s.dtype == np.float32 and s.shape == (n,) and np.array_equal(s, a + b),
                  "iron_add on %s equals NumPy's a + b bit for bit" % backend)

    # 3. Bad input: exit 2, a clear message, no output file.
    np.save(os.path.join(work, "short.npy"), a[:999])
    np.save(os.path.join(work, "cplx.npy"), a.astype(np.complex64))
    np.save(os.path.join(work, "big.npy"), np.full((rows, d), 1e6))
    np.save(os.path.join(work, "fortran.npy"), np.asfortranarray(x))
    with open(os.path.join(work, "keep.npy"), "wb") as f:
        f.write(b"old content")
    os.makedirs(os.path.join(work, "adir.npy"))
    add = ["run", "iron_add", "--dtype", "f32", "--grid", "1", "--tg", "256", "n=1000"]
    cases = [
        ("a missing file", add + ["a=nope.npy", "b=b.npy", "--out", "out=keep.npy"], "nope.npy: no such file"),
        ("a wrong shape", add + ["a=short.npy", "b=b.npy", "--out", "out=keep.npy"],
         "short.npy: holds 999 values (shape (999,)), a takes 1000 (iron_add declares a of n (1000))"),
        ("a wrong dtype", add + ["a=cplx.npy", "b=b.npy", "--out", "out=keep.npy"], "cplx.npy: dtype '<c8' is not one iron reads"),
        ("Fortran order", ["run", "iron_rms_norm", "--dtype", "f16", "rows=3", "d=64", "eps=1e-6", "x=fortran.npy",
                           "w=w.npy", "--out", "out=keep.npy"], "fortran.npy: the array is in Fortran order"),
        ("an unknown buffer", add + ["a=a.npy", "b=b.npy", "c=b.npy", "--out", "out=keep.npy"],
         "unknown parameter 'c': iron_add reads the buffers a, b"),
        ("an unknown scalar", add + ["a=a.npy", "b=b.npy", "m=3", "--out", "out=keep.npy"],
         "unknown parameter 'm': kernel iron_add's scalars are n, its buffers a, b, out"),
        ("an unknown call argument", ["run", "iron_rms_norm", "--dtype", "f16", "rows=3", "dim=64", "eps=1e-6",
                                      "x=x.npy", "w=w.npy", "--out", "out=keep.npy"],
         "unknown argument 'dim': a call of family iron_rms_norm names d, eps, rows"),
        ("an input missing", add + ["a=a.npy", "--out", "out=keep.npy"], "input 'b' has no data: give b=FILE.npy"),
        ("an output given as input", add + ["a=a.npy", "b=b.npy", "out=b.npy"],
         "'out' is an output of iron_add, not an input"),
        ("a value out of range", ["run", "iron_rms_norm", "--dtype", "f16", "rows=3", "d=64", "eps=1e-6", "x=big.npy",
                                  "w=w.npy", "--out", "out=keep.npy"],
         "big.npy: element 0 (index [0, 0]) = 1000000 is out of the range of f16 (largest finite 65504)"),
        ("a scalar out of range", ["run", "iron_add", "--dtype", "f32", "--grid", "1", "--tg", "256", "n=-1",
                                   "a=a.npy", "b=b.npy", "--out", "out=keep.npy"], "n=-1: the value"),
        ("an unwritable output", add + ["a=a.npy", "b=b.npy", "--out", "out=no/such/dir/s.npy"],
         "cannot write no/such/dir/s.npy: no directory no/such/dir"),
        ("an output onto a directory", add + ["a=a.npy", "b=b.npy", "--out", "out=adir.npy"],
         "cannot write adir.npy: it is a directory"),
        ("an unknown output", add + ["a=a.npy", "b=b.npy", "--out", "y=keep.npy"], "--out y: iron_add writes no buffer 'y'"),
        ("a launch the device refuses", ["run", "iron_add", "--dtype", "f32", "--grid", "1", "--tg", "2048", "n=1000",
                                         "a=a.npy", "b=b.npy", "--out", "out=keep.npy", "-o", "never"], "threadgroup"),
        ("an unknown kernel", ["run", "iron_nope", "--dtype", "f32"], "unknown kernel or family 'iron_nope'"),
        ("a kernel without a launch", ["run", "iron_tg_histogram", "--dtype", "f32"],
         "has no selector (no family of that name): give the launch with --grid and --tg"),
    ]
    for what, args, message in cases:
        before = sorted(os.listdir(work))
        rc, out, err = run(iron, args, work)
        check(rc == 2, "%s exits 2 (rc %d)\n%s%s" % (what, rc, out, err))
        check(message in out + err, "%s: message '%s' in\n%s%s" % (what, message, out, err))
        check(sorted(os.listdir(work)) == before, "%s leaves no file behind: %s" % (what, sorted(set(os.listdir(work)) - set(before))))
        with open(os.path.join(work, "keep.npy"), "rb") as f:
            check(f.read() == b"old content", "%s leaves an existing output file as it was" % what)

    if failures:
        print("check_run_npy: %d failures" % len(failures))
        return 1
    print("check_run_npy: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
