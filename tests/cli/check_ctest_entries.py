#!/usr/bin/env python3
"""Every CTest entry must check the output it expects (issue 7: a WILL_FAIL entry without an
output check passes on any failure): each test needs a PASS_REGULAR_EXPRESSION, or runs through
tests/cli/expect.py (which checks the exit status and the output), and none may use WILL_FAIL.
Usage: check_ctest_entries.py CTEST BUILD_DIR"""
import json
import subprocess
import sys


def main():
    ctest, build = sys.argv[1], sys.argv[2]
    p = subprocess.run([ctest, "--show-only=json-v1"], cwd=build, stdout=subprocess.PIPE, text=True, check=True)
    tests = json.loads(p.stdout)["tests"]
    bad = []
    for t in tests:
        props = {pr["name"]: pr["value"] for pr in t.get("properties", [])}
        cmd = t.get("command", [])
        checked = "PASS_REGULAR_EXPRESSION" in props or any(c.endswith("/cli/expect.py") for c in cmd)
        if props.get("WILL_FAIL"):
            bad.append("%s: WILL_FAIL (use expect.py --rc)" % t["name"])
        elif not checked:
            bad.append("%s: no PASS_REGULAR_EXPRESSION and not run through expect.py" % t["name"])
    for b in bad:
        print("unchecked: " + b)
    print("%d CTest entries, %d without an output check" % (len(tests), len(bad)))
    print("check_ctest_entries: %s" % ("ok" if not bad and tests else "FAILED"))
    return 1 if bad or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
