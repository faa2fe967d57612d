#!/usr/bin/env python3
"""Runs a command and checks both its exit status and its output, so a CTest entry never passes
on the exit status alone (any failure passing a WILL_FAIL test) or on output alone.

  expect.py [--rc N | --rc nonzero] [--match REGEX]... [--reject REGEX]... [--empty] -- CMD ARGS...

--match: the combined stdout and stderr must match (re.S | re.M); --reject: must not match;
--empty: the output must be empty. Prints "expect: ok" or what was wrong, then the output tail.
"""
import re
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        print("expect: usage: expect.py [--rc N|nonzero] [--match RE]... [--reject RE]... [--empty] -- CMD...")
        return 2
    split = argv.index("--")
    opts, cmd = argv[:split], argv[split + 1:]
    rc_want, matches, rejects, empty = "0", [], [], False
    i = 0
    while i < len(opts):
        o = opts[i]
        if o in ("--rc", "--match", "--reject") and i + 1 < len(opts):
            v = opts[i + 1]
            if o == "--rc":
                rc_want = v
            elif o == "--match":
                matches.append(v)
            else:
                rejects.append(v)
            i += 2
        elif o == "--empty":
            empty = True
            i += 1
        else:
            print("expect: unknown option %s" % o)
            return 2
    if not cmd:
        print("expect: no command")
        return 2
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    out = p.stdout
    problems = []
    if rc_want == "nonzero":
        if p.returncode == 0:
            problems.append("exit status 0, expected non-zero")
    elif p.returncode != int(rc_want):
        problems.append("exit status %d, expected %s" % (p.returncode, rc_want))
    problems += ["output does not match /%s/" % m for m in matches if not re.search(m, out, re.S | re.M)]
    problems += ["output matches /%s/" % r for r in rejects if re.search(r, out, re.S | re.M)]
    if empty and out.strip():
        problems.append("output is not empty")
    sys.stdout.write(out[-20000:])
    if problems:
        print("expect: FAILED: " + "; ".join(problems))
        return 1
    print("expect: ok (exit %d)" % p.returncode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
