#!/usr/bin/env python3
"""The CLI decodes runner messages with typed errors (issue 7): a well-formed line with a
wrong-typed field, a `test` message without `max_error`, an unknown message type or a line cut
off give a clear error naming the field and the line, count as a failure, and never abort the
CLI or pass. Runs `iron` against a fake runner (IRON_RUNNER) that replays given lines.
Usage: check_protocol_errors.py IRON WORK_DIR"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys

GOOD_TEST = {"v": 1, "type": "test", "kernel": "iron_add", "case": "n1003", "dtype": "f32", "backend": "interp",
             "tolerance": 1e-6, "status": "pass", "max_error": 0.0, "message": "", "ms": 1.0}


def line(**over):
    m = dict(GOOD_TEST)
    for k, v in over.items():
        if v is None:
            m.pop(k, None)
        else:
            m[k] = v
    return json.dumps(m)


SUMMARY = json.dumps({"v": 1, "type": "summary", "passed": 1, "failed": 0, "skipped": 0})
HELLO = json.dumps({"v": 1, "type": "hello", "runner_version": "0.1.0"})

# (label, command, runner lines, expected exit code, regex the output must match, regex it must not)
CASES = [
    ("a good run passes", ["test"], [HELLO, line(), SUMMARY], 0, r"1 passed, 0 failed", r"runner output line"),
    ("every case skipped: nothing ran", ["test"],
     [HELLO, line(status="skip", message="device does not support f16"),
      json.dumps({"v": 1, "type": "summary", "passed": 0, "failed": 0, "skipped": 1})], 2,
     r"0 passed, 0 failed, 1 skipped.*all 1 matched test cases were skipped on this device: nothing was run", r"terminate"),
    ("wrong-typed kernel field", ["test"], [HELLO, line(kernel=7), SUMMARY], 1,
     r"runner output line 2: field \"kernel\" of a \"test\" message must be a string, not number 7.*0 passed, 1 failed",
     r"PASS"),
    ("test without max_error", ["test"], [HELLO, line(max_error=None), SUMMARY], 1,
     r"runner output line 2: a \"test\" message has no field \"max_error\".*0 passed, 1 failed", r"PASS"),
    ("max_error of the wrong type", ["test"], [HELLO, line(max_error=[1]), SUMMARY], 1,
     r"field \"max_error\" of a \"test\" message must be a number or \"inf\", not array", r"PASS"),
    ("tolerance_unit of the wrong type", ["test"], [HELLO, line(tolerance_unit=3), SUMMARY], 1,
     r"field \"tolerance_unit\" of a \"test\" message must be a string, not number 3.*0 passed, 1 failed",
     r"terminate"),
    ("unknown message type", ["test"], [HELLO, json.dumps({"v": 1, "type": "surprise"}), line(), SUMMARY], 1,
     r"runner output line 2: unknown message type \"surprise\".*1 passed, 1 failed", r"terminate"),
    ("a line cut off", ["test"], [HELLO, line(), SUMMARY, '{"v":1,"type":"te'], 1,
     r"runner output line 4: the runner's output ends inside a line", r"terminate"),
    ("wrong-typed device field under inspect", ["inspect", "iron_add"],
     [HELLO, json.dumps({"v": 1, "type": "text", "text": 5})], 1, r"field \"text\" of a \"text\" message must be a string",
     r"terminate"),
    ("wrong-typed artifact under build", ["build", "-o", "OUT"],
     [HELLO, json.dumps({"v": 1, "type": "artifact", "kernel": "k", "dtype": "f32", "target": "cuda", "path": "p",
                         "ok": "yes"}), json.dumps({"v": 1, "type": "summary", "passed": 1, "failed": 0})], 1,
     r"field \"ok\" of a \"artifact\" message must be true or false", r"terminate"),
    ("wrong-typed bench field", ["bench"],
     [HELLO, json.dumps({"v": 1, "type": "bench_start", "kernel": "k", "bench": "b", "dtype": "f32", "index": "1",
                         "total": 1}), json.dumps({"v": 1, "type": "summary", "passed": 0, "failed": 0})], 1,
     r"field \"index\" of a \"bench_start\" message must be an integer", r"terminate"),
]


def main():
    iron, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = 0
    for i, (label, cmd, lines, want, must, must_not) in enumerate(CASES):
        data = os.path.join(work, "lines%d.txt" % i)
        with open(data, "w") as f:
            f.write("\n".join(lines) + ("" if lines[-1].startswith('{"v":1,"type":"te') else "\n"))
        runner = os.path.join(work, "runner%d.sh" % i)
        with open(runner, "w") as f:
            f.write("#!/bin/sh\ncat '%s'\n" % data)
        os.chmod(runner, os.stat(runner).st_mode | stat.S_IXUSR)
        cmd = [c.replace("OUT", os.path.join(work, "out")) for c in cmd]
        env = dict(os.environ, IRON_RUNNER=runner, IRON_NO_REBUILD="1")
        p = subprocess.run([iron] + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        ok = p.returncode == want and re.search(must, p.stdout, re.S) and not re.search(must_not, p.stdout)
        print("%s %s -> %d (want %d)" % ("ok  " if ok else "FAIL", label, p.returncode, want))
        if not ok:
            failures += 1
            print("    expected /%s/, not /%s/, in:\n%s" % (must, must_not, p.stdout[-2000:]))
    print("check_protocol_errors: %s" % ("ok" if not failures else "%d FAILED" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
