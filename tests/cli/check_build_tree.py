#!/usr/bin/env python3
"""`iron build` trees and `iron clean`, end to end.

  check_build_tree.py IRON WORKDIR

1. Two builds of the same kernels into two directories give byte-identical trees, and the
   manifest describes them: every file it lists exists with that size and content hash, every
   file of the tree (but the manifest) is listed, kernels carry parameters, mode and entry
   names, variant families their variants, selectors their rows.
2. A rebuild of one directory with less to emit removes the files the first build wrote and the
   second does not, and leaves a foreign file alone.
3. `iron clean DIR` removes what the build wrote and the compile cache's entries, and nothing
   else: a foreign file in the build directory, a file changed since the build, the
   calibration cache and a foreign file in the cache directory all survive.
4. Bad requests exit 2 with a located message: an unknown --emit name, clean of a directory
   without a manifest (which removes nothing, not even the cache).
"""
import json
import os
import re
import shutil
import subprocess
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(iron, args, env):
    p = subprocess.run([iron] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return p.returncode, p.stdout


def tree(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                files[os.path.relpath(p, root)] = f.read()
    return files


def main():
    iron, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, IRON_NO_REBUILD="1", IRON_CACHE_DIR=os.path.join(work, "cache"))
    env.pop("IRON_NO_DISK_CACHE", None)
    # Every backend (CUDA, HIP code objects, SPIR-V, and any other target this build has) for one
    # kernel at every dtype, twice: byte-identical trees.
    ha, hb = os.path.join(work, "all_a"), os.path.join(work, "all_b")
    for d in (ha, hb):
        rc, out = run(iron, ["build", "--emit", "all", "--hip-arch", "gfx90a", "-f", "iron_rmsnorm_spec", "-o", d], env)
        check(rc == 0 and "FAIL" not in out, "build --emit all -o %s exits 0 without failures (rc %d)\n%s" % (d, rc, out[-3000:]))
    th, thb = tree(ha), tree(hb)
    for want in ("cuda/iron_rmsnorm_spec_bf16.cu", "cuda/iron_rmsnorm_spec_bf16.sm_90a.cubin",
                 "hip/iron_rmsnorm_spec_bf16.hip", "hip/iron_rmsnorm_spec_bf16.gfx90a.co",
                 "spirv/iron_rmsnorm_spec_bf16.comp", "spirv/iron_rmsnorm_spec_bf16.spv", "ir/iron_rmsnorm_spec.ir"):
        check(want in th, "--emit all wrote %s" % want)
    check(th.get("hip/iron_rmsnorm_spec_f32.gfx90a.co", b"")[:4] == b"\x7fELF", "a HIP code object is an ELF file")
    check(th.keys() == thb.keys() and all(th[p] == thb[p] for p in th),
          "two --emit all builds are byte-identical (differ: %s)" % [p for p in th if th[p] != thb.get(p)][:5])
    mh = json.loads(th["manifest.json"])
    check({p["backend"] for p in mh["profiles"]} >= {"cuda", "hip", "spirv"}, "a profile per backend")
    hip = [p for p in mh["profiles"] if p["backend"] == "hip"]
    check(hip and hip[0]["lane_width"] == 64, "the HIP profile (gfx90a) plans for 64-lane wavefronts")

    a, b = os.path.join(work, "a"), os.path.join(work, "b")
    # The RMSNorm kernels: generic and specialized kernels, variant families, selectors.
    for d in (a, b):
        rc, out = run(iron, ["build", "--emit", "cuda,spirv,ir", "-f", "iron_rms", "-o", d], env)
        check(rc == 0 and "FAIL" not in out, "build -o %s exits 0 without failures (rc %d)\n%s" % (d, rc, out[-2000:]))
    ta, tb = tree(a), tree(b)
    check(len(ta) > 20, "the build wrote files (%d)" % len(ta))
    check(ta.keys() == tb.keys(), "both trees hold the same files")
    differ = [p for p in ta if p in tb and ta[p] != tb[p]]
    check(not differ, "byte-identical trees (differ: %s)" % differ[:5])

    m = json.loads(ta["manifest.json"])
    check(m.get("iron_build_manifest") == 1, "manifest format 1")
    listed = {f["path"]: f for f in m["files"]}
    check(set(listed) == set(ta) - {"manifest.json"}, "the manifest lists every file of the tree and no other")
    for p, f in listed.items():
        check(f["bytes"] == len(ta.get(p, b"")), "size of %s" % p)
        check(len(f["xxh3_128"]) == 32 and all(c in "0123456789abcdef" for c in f["xxh3_128"]), "hash of %s" % p)
    kernels = {k["name"]: k for k in m["kernels"]}
    check("iron_rmsnorm_spec" in kernels, "iron_rmsnorm_spec is in the manifest")
    spec = kernels.get("iron_rmsnorm_spec", {})
    params = {p["name"]: p for p in spec.get("params", [])}
    check(params.get("d", {}).get("specialize") is True, "iron_rmsnorm_spec's d is declared specialize")
    check(params.get("x", {}).get("kind") == "buffer" and params["x"].get("access") == "in", "x is an input buffer")
    check(spec.get("mode") and len(spec.get("ir_hash", "")) == 16, "mode and IR hash")
    entries = [i["entry"] for k in m["kernels"] for i in k["instantiations"]]
    check("iron_rmsnorm_spec_bf16" in entries, "entry names per dtype")
    for k in m["kernels"]:
        for i in k["instantiations"]:
            for backend, outs in i.get("outputs", {}).items():
                for o in outs:
                    if "skipped" in o:  # beyond the target's limits: named, no file
                        check(o["skipped"].startswith("not expressible on "), "%s %s says why it was left out" % (i["entry"], backend))
                        continue
                    check(o["path"] in listed and listed[o["path"]]["xxh3_128"] == o.get("xxh3_128"),
                          "%s output %s is a listed file with its hash" % (i["entry"], o["path"]))
    fams = {f["name"]: f for f in m["families"]}
    check("iron_rms_norm_warp" in fams and len(fams["iron_rms_norm_warp"]["variants"]) >= 2,
          "variant family iron_rms_norm_warp and its variants")
    sels = {s["family"]: s for s in m["selectors"]}
    rows = sels.get("iron_rms_norm", {}).get("rows", [])
    check(len(rows) >= 2 and all("plan" in r or "error" in r for r in rows), "selector rows of iron_rms_norm")
    check(any(r.get("plan", {}).get("steps") for r in rows), "a selector row with steps")
    check({r["profile"] for r in rows} == {"cuda", "spirv"}, "rows for each backend's reference profile")

    # 2. Rebuild a with IR only: the sources and binaries go, a foreign file stays.
    with open(os.path.join(a, "cuda", "notes.txt"), "w") as f:
        f.write("mine\n")
    rc, out = run(iron, ["build", "--emit", "ir", "-f", "iron_rms", "-o", a], env)
    check(rc == 0, "rebuild with --emit ir exits 0")
    t2 = tree(a)
    check(not any(p.startswith("spirv/") for p in t2), "the SPIR-V files of the first build are gone")
    check(set(p for p in t2 if p.startswith("cuda/")) == {"cuda/notes.txt"}, "only the foreign file is left in cuda/")
    check(all(p in t2 for p in ta if p.startswith("ir/")), "the IR files are there")

    # 3. clean: what the build wrote and the cache entries go; everything else stays.
    rc, out = run(iron, ["test", "--backend", "vulkan", "-f", "iron_add/n1003", "--dtype", "f32"], env)
    cache = env["IRON_CACHE_DIR"]
    entries = [n for n in os.listdir(cache) if n.endswith(".bin")] if os.path.isdir(cache) else []
    check(rc == 0 and entries, "a Vulkan run filled the compile cache (rc %d)" % rc)
    with open(os.path.join(cache, "calibration.json"), "w") as f:
        f.write("{}\n")
    with open(os.path.join(cache, "0123456789abcdef0123456789abcdef.bin"), "w") as f:
        f.write("not an Iron cache entry\n")
    changed = [p for p in tb if p.startswith("spirv/")][0]
    with open(os.path.join(b, changed), "a") as f:
        f.write("// edited\n")
    with open(os.path.join(b, "README"), "w") as f:
        f.write("mine\n")
    rc, out = run(iron, ["clean", b], env)
    check(rc == 0, "clean exits 0 (%d)\n%s" % (rc, out))
    check("kept %s: not the file iron build wrote" % os.path.join(b, changed) in out, "clean names the changed file")
    check("removed %d entries" % len(entries) in out, "clean removed the %d cache entries\n%s" % (len(entries), out))
    left = tree(b)
    check(set(left) == {"README", changed}, "only the foreign and the changed file are left in b: %s" % sorted(left))
    check(sorted(os.listdir(cache)) == ["0123456789abcdef0123456789abcdef.bin", "calibration.json"],
          "the calibration cache and the foreign file are left in the cache: %s" % sorted(os.listdir(cache)))
    rc, out = run(iron, ["clean", a, "--keep-cache"], env)
    check(rc == 0 and set(tree(a)) == {"cuda/notes.txt"}, "clean of a leaves its foreign file only: %s" % sorted(tree(a)))

    # A directory of the tree swapped for a link after the build: clean never follows it, so the
    # files behind it stay even where they hold exactly what the build wrote.
    c, elsewhere = os.path.join(work, "c_linked"), os.path.join(work, "elsewhere")
    rc, out = run(iron, ["build", "--emit", "spirv", "-f", "iron_rmsnorm_spec", "-o", c], env)
    check(rc == 0, "build -o c_linked exits 0")
    shutil.move(os.path.join(c, "spirv"), elsewhere)
    os.symlink(elsewhere, os.path.join(c, "spirv"))
    kept = sorted(os.listdir(elsewhere))
    rc, out = run(iron, ["clean", c, "--keep-cache"], env)
    check(rc == 0 and sorted(os.listdir(elsewhere)) == kept and kept,
          "clean does not remove files behind a linked directory (rc %d)\n%s" % (rc, out))

    # 4. Bad requests.
    rc, out = run(iron, ["build", "--emit", "hip", "--hip-arch", "gfx90a,gfx1030", "-f", "iron_add", "-o",
                         os.path.join(work, "w")], env)
    check(rc == 2 and "gfx90a runs 64-lane wavefronts and gfx1030 32-lane ones" in out,
          "HIP architectures of two wavefront widths in one build exit 2 (rc %d): %s" % (rc, out))
    check(not os.path.exists(os.path.join(work, "w")), "and write nothing")
    rc, out = run(iron, ["build", "--emit", "cuda,ptx", "-o", os.path.join(work, "c")], env)
    check(rc == 2 and re.search(r"--emit takes cuda, hip, spirv, (\w+, )*ir, manifest or all \(or a comma-separated list\), not 'ptx'", out),
          "an unknown --emit name exits 2 naming it (rc %d): %s" % (rc, out))
    check(not os.path.exists(os.path.join(work, "c")), "a refused build writes nothing")
    os.makedirs(os.path.join(work, "plain"))
    with open(os.path.join(work, "plain", "data.txt"), "w") as f:
        f.write("x\n")
    rc, out = run(iron, ["clean", os.path.join(work, "plain"), b], env)
    check(rc == 2 and "has no manifest.json" in out, "clean of a directory without a manifest exits 2 (rc %d): %s" % (rc, out))
    check(os.path.exists(os.path.join(work, "plain", "data.txt")), "and removes nothing")

    if failures:
        print("check_build_tree: %d failures" % len(failures))
        return 1
    print("check_build_tree: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
