#!/usr/bin/env python3
"""Bounded fuzz campaign of the CLI's handling of runner output, end to end: a fake runner
(IRON_RUNNER) replays random and mutated protocol lines to every command that renders runner
messages (test, test --json, inspect, device, build, list, list --case-set, bench, calibrate),
and `iron` must end with exit status 0, 1 or 2 every time: never a signal (an abort from an
uncaught exception, a crash) or a hang. The decoder itself is fuzzed in
tests/unit/protocol_test.cpp; this covers the command handlers behind it.
Usage: fuzz_cli_messages.py IRON WORK_DIR [ROUNDS]"""
import json
import os
import random
import shutil
import stat
import subprocess
import sys

SEEDS = [
    {"type": "hello", "runner_version": "0.1.0"},
    {"type": "device", "backend": "vulkan", "available": True, "name": "dev", "driver": "1", "arch": "x",
     "lane_width": 32, "max_threads_per_group": 1024, "shared_memory_bytes": 49152, "memory_bytes": 1 << 30,
     "f16": True, "bf16": True},
    {"type": "device", "backend": "cuda", "available": False, "why": "none"},
    {"type": "test_start", "kernel": "k", "case": "c", "dtype": "f32"},
    {"type": "test", "kernel": "k", "case": "c", "dtype": "f32", "backend": "interp", "tolerance": 1e-6,
     "status": "pass", "max_error": 0.0, "message": "", "ms": 1.0, "ir_hash": "00ff"},
    {"type": "test", "kernel": "k", "case": "c", "dtype": "f16", "backend": "interp", "tolerance": 1e-3,
     "status": "fail", "max_error": "inf", "message": "bad\nworse", "ms": 1.0},
    {"type": "kernel", "name": "k", "mode": "elementwise", "dtypes": ["f32"], "file": "f.cpp", "line": 3},
    {"type": "test_case", "kernel": "k", "case": "c", "dtypes": [{"dtype": "f32", "tolerance": 1e-6}]},
    {"type": "summary", "passed": 1, "failed": 0, "skipped": 0, "kernels": 1, "pipeline_ms": 1.5},
    {"type": "text", "text": "ir\n"},
    {"type": "artifact", "kernel": "k", "dtype": "f32", "target": "cuda", "path": "p", "ok": True, "message": ""},
    {"type": "error", "message": "boom"},
    {"type": "warning", "message": "careful"},
    {"type": "bench_start", "kernel": "k", "bench": "b", "dtype": "f32", "index": 1, "total": 2},
    {"type": "bench", "kernel": "k", "bench": "b", "dtype": "f32", "backend": "interp", "status": "ok",
     "samples_us": [1.0, 2.0], "stats": {"median_us": 1.5, "min_us": 1.0, "cv": 0.1, "n": 2},
     "metrics": {"gbps": 1.0, "bottleneck": "memory"}, "resources": {"registers": 3}, "kernel_override": None},
    {"type": "calibration", "backend": "interp", "copy_gbps": 1.0, "fma_gflops": 2.0, "peak_bw_gbps": 3.0,
     "path": "/c"},
]
ODD = [None, True, False, 0, -1, 2 ** 63, 1.5e308, -0.0, "", "inf", "x" * 3, [], [1, "a"], {}, {"a": {"b": []}}]


def mutate(rng):
    m = dict(rng.choice(SEEDS))
    m["v"] = 1
    for _ in range(rng.randint(0, 3)):
        op = rng.randrange(5)
        keys = list(m.keys())
        if op == 0 and keys:
            m.pop(rng.choice(keys))
        elif op == 1 and keys:
            m[rng.choice(keys)] = rng.choice(ODD)
        elif op == 2:
            m["type"] = rng.choice(SEEDS)["type"]
        elif op == 3:
            k = rng.choice(keys) if keys else "x"
            if isinstance(m.get(k), dict) and m[k]:
                inner = dict(m[k])
                inner[rng.choice(list(inner.keys()))] = rng.choice(ODD)
                m[k] = inner
        else:
            m[rng.choice(["extra", "stats", "metrics", "dtypes"])] = rng.choice(ODD)
    line = json.dumps(m)
    r = rng.random()
    if r < 0.1:
        i = rng.randrange(len(line))
        line = line[:i] + rng.choice('{}[]",:\\0e') + line[i + 1:]
    elif r < 0.15:
        line = line[:rng.randrange(len(line))]
    return line


def main():
    iron, work = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = random.Random(0x1209)
    commands = [["test"], ["test", "--json"], ["inspect", "k"], ["device"], ["build", "-o", os.path.join(work, "o")],
                ["list"], ["list", "--case-set"], ["bench"], ["calibrate"], ["test", "--witness", os.path.join(work, "w.json")]]
    runs = lines_total = 0
    bad = []
    for r in range(rounds):
        for cmd in commands:
            lines = [json.dumps(dict(SEEDS[0], v=1))] + [mutate(rng) for _ in range(300)]
            data = os.path.join(work, "lines.txt")
            with open(data, "w") as f:
                f.write("\n".join(lines) + "\n")
            runner = os.path.join(work, "runner.sh")
            with open(runner, "w") as f:
                f.write("#!/bin/sh\ncat '%s'\n" % data)
            os.chmod(runner, os.stat(runner).st_mode | stat.S_IXUSR)
            env = dict(os.environ, IRON_RUNNER=runner, IRON_NO_REBUILD="1")
            try:
                p = subprocess.run([iron] + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace", timeout=60)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            runs += 1
            lines_total += len(lines)
            if rc not in (0, 1, 2):
                keep = os.path.join(work, "crash-%d.txt" % len(bad))
                shutil.copy(data, keep)
                bad.append("iron %s -> %s (lines kept in %s)\n%s" % (" ".join(cmd), rc, keep,
                                                                   (p.stderr[-800:] if rc != "timeout" else "")))
    for b in bad:
        print("FAIL " + b)
    print("%d runs, %d runner lines, %d crashes" % (runs, lines_total, len(bad)))
    print("fuzz_cli_messages: %s" % ("ok" if not bad else "FAILED"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
