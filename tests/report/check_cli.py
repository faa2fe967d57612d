#!/usr/bin/env python3
"""End-to-end checks of `iron snap`, `iron diff`, `iron ab` and `iron report` through the real
CLI, with fake_runner.py standing in for iron-runner (no GPU, and no dependence on the runner's
bench engine). Ends with the plain "N passed, N failed" line.

Usage: check_cli.py PATH/TO/iron [WORKDIR]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
passed, failed = 0, 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("PASS " + name)
    else:
        failed += 1
        print("FAIL " + name + ("\n    " + detail.replace("\n", "\n    ") if detail else ""))


def main():
    iron = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="iron-cli-")
    os.makedirs(work, exist_ok=True)
    snaps = os.path.join(work, "snaps")
    shutil.rmtree(snaps, ignore_errors=True)  # a reused WORKDIR must not hold last run's snapshots
    for stale in ("state", "peers.json", "r.html"):
        if os.path.exists(os.path.join(work, stale)):
            os.remove(os.path.join(work, stale))
    base_env = dict(os.environ, IRON_RUNNER=os.path.join(HERE, "fake_runner.py"), IRON_NO_REBUILD="1",
                    IRON_SNAP_DIR=snaps)
    for k in ("FAKE_SCALE", "FAKE_DRIFT", "FAKE_STATE", "FAKE_OVERRIDE_FACTOR", "FAKE_CRASH"):
        base_env.pop(k, None)

    def run(*args, **env):
        e = dict(base_env, **{k: str(v) for k, v in env.items()})
        p = subprocess.run([iron] + list(args), cwd=work, env=e, capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout, p.stderr

    # snap: write, list, refuse to overwrite, crash leaves nothing
    rc, out, err = run("snap", "base", "-f", "iron_add", "--samples", "40")
    path = os.path.join(snaps, "base.json")
    check("snap writes a snapshot", rc == 0 and os.path.exists(path), out + err)
    snap = json.load(open(path)) if os.path.exists(path) else {}
    res = snap.get("results", [])
    check("snapshot format", snap.get("v") == 1 and snap.get("name") == "base" and snap.get("created", "").endswith("Z")
          and len(res) == 9 and all("type" not in r and "v" not in r and len(r["samples_us"]) == 120 and
                                    r["processes"] == 3 and [len(x) for x in r["runs_us"]] == [40, 40, 40] for r in res),
          json.dumps(snap)[:300])
    rc, out, err = run("snap", "base")
    check("snap refuses to overwrite without --force", rc == 2 and "--force" in err, out + err)
    rc, out, err = run("snap", "--list")
    check("snap --list", rc == 0 and "base" in out and "Fake GPU (cuda)" in out, out + err)
    rc, out, err = run("snap", "crashy", FAKE_CRASH=1)
    check("a crashed runner writes no snapshot", rc != 0 and not os.path.exists(os.path.join(snaps, "crashy.json")),
          out + err)
    rc, out, err = run("snap", "../evil")
    check("snap rejects path-like names", rc == 2, out + err)

    # diff: 10% faster everywhere, the same, and peer rows
    run("snap", "fast", "-f", "iron_add", "--samples", "40", FAKE_SCALE=0.9)
    run("snap", "same", "-f", "iron_add", "--samples", "40")
    rc, out, err = run("diff", "base", "fast", "--json")
    rows = json.loads(out)["rows"] if rc == 0 else []
    check("diff: 10% faster is 'faster' on every row", len(rows) == 9 and all(r["verdict"] == "faster" for r in rows),
          out[:500] + err)
    check("diff: CI below the keep bar", all(r["ci95_ratio"]["hi"] <= 0.97 for r in rows))
    rc, out, err = run("diff", "base", "same", "--json")
    rows = json.loads(out)["rows"] if rc == 0 else []
    check("diff: no change is 'same (within noise)'", rows and all(r["verdict"] == "same (within noise)" for r in rows),
          out[:500] + err)
    rc1, out1, _ = run("diff", "base", "fast")
    rc2, out2, _ = run("diff", "base", "fast")
    check("diff is deterministic", rc1 == 0 and out1 == out2)
    check("diff text output", "9 faster, 0 slower" in out1, out1)

    peers = json.load(open(os.path.join(snaps, "fast.json")))
    eager = [dict(r, source="torch-eager") for r in peers["results"]]
    comp = [dict(r, source="torch-compile", samples_us=[s * 1.2 for s in r["samples_us"]],
                 runs_us=[[s * 1.2 for s in run] for run in r["runs_us"]]) for r in peers["results"]]
    gemm = dict(peers["results"][0], kernel="gemm", bench="m4096_n4096_k4096", dtype="bf16", source="cublas")
    peer_file = os.path.join(work, "peers.json")
    json.dump({"v": 1, "name": "peers", "created": "2026-11-29T00:00:00Z", "results": eager + comp + [gemm]},
              open(peer_file, "w"))
    rc, out, err = run("diff", "base", peer_file, "--json")
    rows = json.loads(out)["rows"] if rc == 0 else []
    both = [r for r in rows if r["side"] == "both"]
    check("diff vs a peer file: one row per peer source", len(both) == 18 and
          sorted({r["source_b"] for r in both}) == ["torch-compile", "torch-eager"] and
          all(r["source_a"] == "iron" for r in both), out[:500] + err)
    check("diff vs a peer file: verdicts per source",
          all(r["verdict"] == ("faster" if r["source_b"] == "torch-eager" else "slower") for r in both))
    check("diff vs a peer file: peer-only GEMM listed",
          [r["kernel"] for r in rows if r["side"] == "b_only"] == ["gemm"], json.dumps(rows[-2:]))
    rc, out, err = run("diff", "base", "nosuch")
    check("diff names a missing snapshot", rc == 2 and "nosuch.json" in err, err)

    # ab: 4 x runs fresh processes per bench, verdict, order agreement, harness warning
    state = os.path.join(work, "state")
    rc, out, err = run("ab", "iron_add", "iron_add_v2", "-f", "n16m", "--dtype", "f32", "--samples", "30", "--json",
                       FAKE_OVERRIDE_FACTOR=0.9, FAKE_STATE=state)
    res = json.loads(out) if rc == 0 else []
    processes = int(open(state).read()) if os.path.exists(state) else 0
    check("ab: 10% faster candidate is 'faster'", len(res) == 1 and res[0]["verdict"] == "faster" and
          res[0]["orders_agree"], out[:600] + err)
    # One discovery run (the fake runner's list names no benches), then 4 x 3 processes.
    check("ab: 4 x runs fresh processes", processes == 1 + 12, "processes: %d" % processes)
    check("ab: 3 processes per side and order", res and all(res[0][o][s]["processes"] == 3 for o in ("order_ab", "order_ba")
                                                           for s in ("a", "b")))
    os.remove(state)
    rc, out, err = run("ab", "iron_add", "iron_add_v2", "-f", "n4m", "--dtype", "f16", "--samples", "30",
                       FAKE_OVERRIDE_FACTOR=1.0, FAKE_DRIFT=0.05, FAKE_STATE=state)
    check("ab: drift across processes flips the orders: harness warning", "harness warning" in out and
          "disagree" in out, out)
    rc, out, err = run("ab", "iron_add", "iron_mul", "--runs", "2")
    check("ab: fewer than 3 runs is refused", rc != 0, out + err)
    rc, out, err = run("ab", "iron_add", "nosuch")
    check("ab: unknown kernel", rc == 2 and "unknown kernel" in err, out + err)

    # report over snapshots and the peer file
    html = os.path.join(work, "r.html")
    rc, out, err = run("report", "base", "fast", peer_file, "-o", html)
    text = open(html).read() if os.path.exists(html) else ""
    check("report: one self-contained file", rc == 0 and "Chart.js v" in text and "<script src" not in text and
          "iron_add/n16m" in text and "torch-compile" in text, out + err)

    # The GPU bundle: a copied iron finds the Chart.js file next to itself (scripts/gpu-bundle.sh
    # puts chart.umd.min.js in .gpu/), before the system's; IRON_CHARTJS still overrides it.
    bundle = os.path.join(work, "bundle")
    shutil.rmtree(bundle, ignore_errors=True)
    os.makedirs(bundle)
    shutil.copy2(iron, os.path.join(bundle, "iron"))
    system_js = [p for p in ("/usr/share/javascript/chart.js/chart.umd.min.js", "/usr/share/javascript/chart.js/chart.min.js")
                 if os.path.exists(p)]
    if system_js:
        with open(system_js[0]) as src, open(os.path.join(bundle, "chart.umd.min.js"), "w") as dst:
            dst.write(src.read() + "\n/* bundled copy */\n")
    env = dict(base_env)
    env.pop("IRON_CHARTJS", None)
    p = subprocess.run([os.path.join(bundle, "iron"), "report", "base", "-o", os.path.join(work, "b.html")], cwd=work,
                       env=env, capture_output=True, text=True, timeout=300)
    text = open(os.path.join(work, "b.html")).read() if os.path.exists(os.path.join(work, "b.html")) else ""
    check("report: a bundled iron inlines the Chart.js next to it", p.returncode == 0 and
          ("Chart.js inlined from " + os.path.join(bundle, "chart.umd.min.js")) in p.stdout and "bundled copy" in text,
          p.stdout + p.stderr)
    os.remove(os.path.join(bundle, "chart.umd.min.js"))
    p = subprocess.run([os.path.join(bundle, "iron"), "report", "base", "-o", os.path.join(work, "c.html")], cwd=work,
                       env=dict(env, IRON_CHARTJS=os.path.join(work, "nosuch.js")), capture_output=True, text=True,
                       timeout=300)
    check("report: a missing IRON_CHARTJS is named", p.returncode == 2 and "nosuch.js" in p.stderr, p.stdout + p.stderr)

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
