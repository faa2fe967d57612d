#!/usr/bin/env python3
"""The exit-code convention of every `iron` command (README, Commands): 0 success, 1 failures
found, 2 bad usage or input; a run that executes nothing exits non-zero and says why.
Usage: check_exit_codes.py IRON WORK_DIR (run with IRON_NO_REBUILD=1)."""
import os
import re
import shutil
import subprocess
import sys


def main():
    iron, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bad_ir = os.path.join(work, "bad.ir")
    with open(bad_ir, "w") as f:
        f.write("this is not IR\n")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), IRON_SNAP_DIR=os.path.join(work, "snaps"))
    interp = ["--backend", "interp"]
    # (arguments, expected exit code, regex the combined output must match)
    cases = [
        ([], 0, r"Usage:.*test"),
        (["--help"], 0, r"Usage:"),
        (["--version"], 0, r"^iron \d+\.\d+\.\d+ \(runner protocol \d+\)"),
        (["--bogus"], 2, r"bogus"),
        (["nosuchcommand"], 2, r"nosuchcommand"),
        (["test", "--bogus"], 2, r"bogus"),
        (["test", "--backend", "metal"], 2, r"metal"),
        (["test", "-f", "iron_add/n1003", "--dtype", "f32"] + interp, 0, r"1 passed, 0 failed"),
        (["test", "-f", "nonexistent"] + interp, 2, r"no test case matched \(-f nonexistent.*nothing was run"),
        (["test", "-f", "iron_add", "--dtype", "i32"] + interp, 2, r"no test case matched.*--dtype i32.*nothing was run"),
        (["test", "--dtype", "f99"] + interp, 2, r"unknown dtype 'f99'"),
        (["test", "-f", "nonexistent", "--json"] + interp, 2, r"no test case matched"),
        (["bench", "-f", "nonexistent", "--samples", "3"] + interp, 2, r"no benchmark match(es|ed) -f nonexistent"),
        (["bench", "-f", "iron_add/n4096", "--dtype", "i32", "--samples", "3"] + interp, 2, r"no benchmark match(es|ed)"),
        (["bench", "-f", "iron_add/n4096", "--kernel-override", "iron_mul", "--samples", "3"] + interp, 1,
         r"0 passed, 3 failed"),
        (["build", "--emit", "ir", "-o", os.path.join(work, "emit"), "-f", "nonexistent"], 2,
         r"no kernel matched \(-f nonexistent\): nothing was built"),
        (["build", "--emit", "ir", "-o", os.path.join(work, "emit"), "-f", "iron_add"], 0, r"[1-9]\d* written, 0 failed"),
        (["build", "--emit", "bogus", "-o", work], 2, r"bogus"),
        (["inspect", "no_such_kernel"], 2, r"no_such_kernel"),
        (["inspect", "iron_add", "--dtype", "i32"], 2, r"not declared for dtype i32"),
        (["opt", os.path.join(work, "missing.ir")], 2, r"missing\.ir"),
        (["opt", bad_ir], 2, r"error"),
        (["snap", "empty", "-f", "nonexistent", "--samples", "3"] + interp, 2, r"no benchmark match(es|ed)"),
        (["diff", "nosnap_a", "nosnap_b"], 2, r"nosnap_a"),
        (["report", "nosnap_a", "-o", os.path.join(work, "r.html")], 2, r"nosnap_a"),
        (["list"], 0, r"iron_add"),
        (["clean", os.path.join(work, "not_a_build"), "--keep-cache"], 2, r"has no manifest\.json"),
        (["run", "iron_nope", "--dtype", "f32"], 2, r"unknown kernel or family 'iron_nope'"),
        (["run", "iron_add", "--dtype", "f32", "--grid", "1", "--tg", "256", "n=8", "a=" + os.path.join(work, "none.npy"),
          "b=" + os.path.join(work, "none.npy")],
         2, r"none\.npy: no such file"),
    ]
    # A named backend that cannot run is a failure (1) for test, bench and calibrate alike.
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
        cases += [
            (["test", "--backend", "cuda", "-f", "iron_add/n1003", "--dtype", "f32"], 1, r"no CUDA driver.*0 passed, 1 failed"),
            (["bench", "--backend", "cuda", "-f", "iron_add/n4096", "--samples", "3"], 1, r"no backend to benchmark on: cuda"),
            (["calibrate", "--backend", "cuda"], 1, r"no backend to calibrate: cuda"),
            (["device", "--calibrate", "--backend", "cuda"], 1, r"no backend to calibrate: cuda"),
            (["run", "iron_add", "--backend", "cuda", "--dtype", "f32", "--grid", "1", "--tg", "256", "n=8"], 1,
             r"backend cuda unavailable: no CUDA driver"),
        ]
    failures = 0
    for args, want, pattern in cases:
        p = subprocess.run([iron] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        text = p.stdout + p.stderr
        ok = p.returncode == want and re.search(pattern, text, re.S | re.M) is not None
        print("%s iron %s -> %d (want %d)" % ("ok  " if ok else "FAIL", " ".join(args), p.returncode, want))
        if not ok:
            failures += 1
            print("    expected /%s/ in:\n%s" % (pattern, text[-2000:]))
    print("check_exit_codes: %s" % ("ok" if not failures else "%d FAILED" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
