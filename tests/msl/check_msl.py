#!/usr/bin/env python3
"""Checks every emitted MSL file (iron build --emit msl) with the host clang.

Usage: check_msl.py CLANG SHIM_DIR FILE_OR_DIR... [--jobs N] [--batch N] [--emit IRON | --conformance IRON]

With --emit IRON, first runs `IRON build --emit msl -o DIR` for the one directory argument (with
--conformance IRON, `IRON conformance --backend msl -o DIR`: every op conformance case) and
checks the DIR/msl it writes (a failed emission is a failure).

For each .metal file:
  1. the kernel's [[...]] attributes are checked against Metal's rules: [[buffer(i)]] on
     `device T*` or `constant T&` parameters, indices distinct and below 31; [[threadgroup(i)]]
     on `threadgroup T*` parameters, distinct; each built-in attribute on a parameter of a type
     Metal allows for it; exactly one `kernel void` whose name is the file's stem;
  2. the attributes are removed, Metal's vector constructors T(a, b, ...) become clang's
     T{a, b, ...} (see the shim), and the file is compiled, -fsyntax-only -std=c++17 -Werror
     (with a few warnings Metal's own compiler does not give turned off), against the shim in
     SHIM_DIR (tests/msl/include/metal_stdlib). Files are compiled in batches, each file in a
     namespace of its own and under #line, so a message names the .metal file and its line.
Prints one FAIL line per problem and a summary "msl check: N files, M failed"; exit 1 on any
failure, 2 on bad usage (no files found).
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

BUILTINS = {
    "thread_position_in_grid": {"uint", "uint2", "uint3", "ushort", "ushort2", "ushort3"},
    "threadgroup_position_in_grid": {"uint", "uint2", "uint3", "ushort", "ushort2", "ushort3"},
    "thread_position_in_threadgroup": {"uint", "uint2", "uint3", "ushort", "ushort2", "ushort3"},
    "threads_per_threadgroup": {"uint", "uint2", "uint3", "ushort", "ushort2", "ushort3"},
    "threadgroups_per_grid": {"uint", "uint2", "uint3", "ushort", "ushort2", "ushort3"},
    "thread_index_in_simdgroup": {"uint", "ushort"},
    "threads_per_simdgroup": {"uint", "ushort"},
    "simdgroup_index_in_threadgroup": {"uint", "ushort"},
    "simdgroups_per_threadgroup": {"uint", "ushort"},
}
MAX_BUFFERS = 31  # Metal's argument table: buffer indices 0..30

ATTR = re.compile(r"\[\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([0-9]+)\s*\))?\s*\]\]")
KERNEL = re.compile(r"^kernel\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", re.M)


def check_attributes(path, text):
    """Returns (problems, text without attributes)."""
    problems = []
    stem = os.path.splitext(os.path.basename(path))[0]
    kernels = KERNEL.findall(text)
    if kernels != [stem]:
        problems.append(f"{path}: expected exactly one `kernel void {stem}(`, found {kernels or 'none'}")
    buffers, groups = {}, {}
    for m in ATTR.finditer(text):
        name, index = m.group(1), m.group(2)
        line_no = text.count("\n", 0, m.start()) + 1
        start = text.rfind("\n", 0, m.start()) + 1
        decl = text[start:m.start()].strip().rstrip(",").strip()
        # The parameter declaration before the attribute: everything after "(" or "," on its line.
        # (The "(" of a `coherent(device)` qualifier is part of the declaration.)
        decl = re.split(r"(?<!coherent)[(,]\s*", decl)[-1].strip()
        where = f"{path}:{line_no}"
        if name == "buffer":
            if index is None:
                problems.append(f"{where}: [[buffer]] needs an index")
                continue
            i = int(index)
            if not (re.match(r"^device\s+(coherent\(device\)\s+)?(const\s+)?\w+\s*\*\s*\w+$", decl) or
                    re.match(r"^constant\s+\w+\s*&\s*\w+$", decl)):
                problems.append(f"{where}: [[buffer({i})]] on '{decl}' (device T* or constant T& expected)")
            if i >= MAX_BUFFERS:
                problems.append(f"{where}: buffer index {i} is beyond Metal's {MAX_BUFFERS} buffer arguments")
            if i in buffers:
                problems.append(f"{where}: buffer index {i} used twice (also line {buffers[i]})")
            buffers[i] = line_no
        elif name == "threadgroup":
            if index is None:
                problems.append(f"{where}: [[threadgroup]] needs an index")
                continue
            i = int(index)
            if not re.match(r"^threadgroup\s+\w+\s*\*\s*\w+$", decl):
                problems.append(f"{where}: [[threadgroup({i})]] on '{decl}' (threadgroup T* expected)")
            if i in groups:
                problems.append(f"{where}: threadgroup index {i} used twice (also line {groups[i]})")
            groups[i] = line_no
        elif name in BUILTINS:
            ty = decl.split()[0] if decl.split() else ""
            if index is not None or ty not in BUILTINS[name]:
                problems.append(f"{where}: [[{name}]] on '{decl}' (type one of {sorted(BUILTINS[name])})")
        else:
            problems.append(f"{where}: unknown attribute [[{m.group(0)[2:-2]}]]")
    if sorted(buffers) != list(range(len(buffers))):
        problems.append(f"{path}: buffer indices {sorted(buffers)} are not 0..{len(buffers) - 1}")
    return problems, ATTR.sub("", text)


VECTOR_CTOR = re.compile(r"(?<![A-Za-z0-9_])((?:u?char|u?short|u?int|u?long|half|float)[234])\(")


def vector_braces(text):
    """Metal's vector constructors T(a, b) as clang ext-vector list initialisation T{a, b}."""
    out, at = [], 0
    for m in VECTOR_CTOR.finditer(text):
        if m.start() < at:
            continue
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        if i >= len(text):
            break
        inner = vector_braces(text[m.end():i])
        out.append(text[at:m.start()] + m.group(1) + "{" + inner + "}")
        at = i + 1
    out.append(text[at:])
    return "".join(out)


def compile_batch(clang, shim_dir, batch, workdir, n):
    """batch: list of (path, stripped text). Returns clang's messages ('' when clean)."""
    tu = os.path.join(workdir, f"batch{n}.cpp")
    with open(tu, "w") as f:
        f.write("#include <metal_stdlib>\n")
        for i, (path, text) in enumerate(batch):
            f.write(f"namespace iron_msl_file_{i} {{\n#line 1 \"{path}\"\n{text}\n}}\n")
    cmd = [clang, "-fsyntax-only", "-x", "c++", "-std=c++17", "-nostdinc++", "-isystem", shim_dir,
           "-Werror", "-Wall", "-Wno-unused-variable", "-Wno-unused-function", "-Wno-unused-but-set-variable",
           "-ferror-limit=50", tu]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return (r.stdout + r.stderr).strip() if r.returncode != 0 else ""


def main():
    args = sys.argv[1:]
    jobs, batch_size = 2, 40
    if "--jobs" in args:
        i = args.index("--jobs")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    if "--batch" in args:
        i = args.index("--batch")
        batch_size = int(args[i + 1])
        del args[i:i + 2]
    iron, emit_cmd = None, None
    for flag, cmd in (("--emit", ["build", "--emit", "msl", "-o"]), ("--conformance", ["conformance", "--backend", "msl", "-o"])):
        if flag in args:
            i = args.index(flag)
            iron, emit_cmd = args[i + 1], cmd
            del args[i:i + 2]
    if len(args) < 3:
        print(__doc__)
        return 2
    clang, shim_dir, inputs = args[0], args[1], args[2:]
    if iron:
        r = subprocess.run([iron] + emit_cmd + [inputs[0]], capture_output=True, text=True)
        lines = r.stdout.splitlines()
        for l in lines:  # what a target cannot express is named, one line per case
            if l.startswith("CANNOT "):
                print(l)
        summary = [l for l in lines if " written, " in l or l.startswith("conformance: ")]
        print(summary[-1] if summary else r.stdout + r.stderr)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            print("FAIL " + " ".join(["iron"] + emit_cmd))
            return 1
        inputs = [os.path.join(inputs[0], "msl")]
    files = []
    for p in inputs:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".metal"))
        elif p.endswith(".metal") and os.path.isfile(p):
            files.append(p)
    if not files:
        print(f"msl check: no .metal files in {' '.join(inputs)}")
        return 2
    failed = set()
    stripped = []
    for path in files:
        with open(path) as f:
            text = f.read()
        problems, clean = check_attributes(path, text)
        for p in problems:
            print(f"FAIL {p}")
            failed.add(path)
        stripped.append((path, vector_braces(clean)))
    batches = [stripped[i:i + batch_size] for i in range(0, len(stripped), batch_size)]
    with tempfile.TemporaryDirectory() as work, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda nb: compile_batch(clang, shim_dir, nb[1], work, nb[0]), enumerate(batches)))
    for batch, messages in zip(batches, results):
        if not messages:
            continue
        print(messages)
        named = {p for p, _ in batch if p + ":" in messages}
        for p in named or {p for p, _ in batch}:
            print(f"FAIL {p}: clang rejects it (messages above)")
            failed.add(p)
    print(f"msl check: {len(files)} files, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
