#!/usr/bin/env python3
"""The witness of a corpus run (`iron test --witness`, seeds §5.4) and `iron diff` of two
witnesses: two runs of the same code on the interpreter give the same digest ("same", exit 0);
a changed result is named case by case (exit 1); a witness whose digest does not match its
contents is rejected (exit 2); the case set of a full run equals `iron list --case-set`.
Usage: check_witness.py IRON WORK_DIR (IRON_NO_REBUILD=1)."""
import json
import os
import re
import shutil
import subprocess
import sys


def main():
    iron, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def run(*args):
        p = subprocess.run([iron] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        return p.returncode, p.stdout

    def check(label, cond, out=""):
        print("%s %s" % ("ok  " if cond else "FAIL", label))
        if not cond:
            failures.append(label)
            print("    " + out[-2000:].replace("\n", "\n    "))

    w = [os.path.join(work, "w%d.json" % i) for i in range(4)]
    rc, out = run("test", "--backend", "interp", "-f", "iron_add", "--witness", w[0])
    check("witness written", rc == 0 and re.search(r"witness: [0-9a-f]{32} \([1-9][0-9]* results", out) is not None, out)
    rc, out = run("test", "--backend", "interp", "-f", "iron_add", "--witness", w[1])
    rc, out = run("diff", w[0], w[1])
    check("two runs of the same code: same", rc == 0 and "same: the digests match (0 changed" in out, out)
    doc = json.load(open(w[0]))
    check("witness fields", doc.get("kind") == "iron-witness" and doc["device"]["backend"] == "interp" and
          all(re.fullmatch(r"[0-9a-f]{16}", r["ir_hash"]) and r["tolerance_bits"].startswith("0x") for r in doc["results"]),
          json.dumps(doc)[:500])
    # A changed result, re-digested as the CLI would (the digest covers the results).
    rc, out = run("test", "--backend", "interp", "-f", "iron_mul", "--witness", w[2])
    rc, out = run("diff", w[0], w[2])
    check("different cases are listed", rc == 1 and "only in A: iron_add/n1003 [f32]" in out and
          "only in B: iron_mul/" in out and "case set differs" in out, out)
    edited = json.load(open(w[1]))
    edited["results"][0]["status"] = "fail"
    json.dump(edited, open(w[3], "w"))
    rc, out = run("diff", w[0], w[3])
    check("an edited witness is rejected", rc == 2 and "does not match its contents" in out, out)
    # The case set of a full run is the registered one.
    full = os.path.join(work, "full.json")
    rc, out = run("test", "--backend", "interp", "--witness", full)
    rc2, listed = run("list", "--case-set")
    doc = json.load(open(full)) if os.path.exists(full) else {"case_set": {}}
    m = re.search(r"^(\d+) cases, digest ([0-9a-f]{32})$", listed, re.M)
    check("a full run's case set is the registered case set", rc == 0 and rc2 == 0 and m is not None and
          doc["case_set"].get("count") == int(m.group(1)) and doc["case_set"].get("digest") == m.group(2),
          out[-500:] + listed)
    print("check_witness: %s" % ("ok" if not failures else "FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
