#!/usr/bin/env python3
"""Generates docs/test-inventory.md from the code: every GoogleTest test, pass text test, CTest
entry, IRON_TEST_KERNEL case and IRON_BENCH, with its layer, the backends it runs on and what it
guards, plus the count and digest of the registered case set (`iron list --case-set`).

What a test guards comes from the code (docs/testing.md, "Test inventory"):
  - a GoogleTest TEST: the comment block directly above it, else its file's header comment;
  - a CTest entry: the `#` comment block directly above its add_test in tests/CMakeLists.txt;
  - a pass text test: its `; pass:` and `; mutation:` lines;
  - an IRON_TEST_KERNEL case or IRON_BENCH: a `// guards: ...` line directly above it, else a
    default naming the kernel, the case and its dtypes.

  scripts/test-inventory.py --iron build/bin/iron           # write docs/test-inventory.md
  scripts/test-inventory.py --iron build/bin/iron --check   # exit 1 if the committed doc is stale
(`make test-inventory` runs the first.)
"""
import argparse
import difflib
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "test-inventory.md")

# Layer of a unit-test file (docs/testing.md, "The layers"); other files are "unit".
UNIT_LAYERS = {
    "pass_test.cpp": "pass tests",
    "fuzz_test.cpp": "fuzz and differential",
    "differential_test.cpp": "fuzz and differential",
    "mutation_test.cpp": "mutation",
    "compare_test.cpp": "bench comparison",
    "stats_test.cpp": "bench statistics",
    "bench_test.cpp": "bench engine",
    "timing_test.cpp": "bench timing",
    "protocol_test.cpp": "CLI protocol",
}
# A test runs on a backend when its body (else its file) names the backend's enumerator; the
# interpreter also when it calls it directly. Anything else is "host" (no device).
BACKEND_PATTERNS = [("vulkan", r"Backend::Vulkan"), ("cuda", r"Backend::Cuda"),
                    ("interp", r"Backend::Interp|passes::interpret\b|interpret\(")]


def rel(path):
    return os.path.relpath(path, ROOT)


def squash(text, limit=320):
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(". ", 0, limit)
    return text[:cut + 1] if cut > 80 else text[:limit - 1].rstrip() + "…"


def cell(text):
    return text.replace("|", "\\|")


def comment_above(lines, index, marker):
    """The block of comment lines (starting with `marker`) directly above lines[index]."""
    block = []
    i = index - 1
    while i >= 0 and lines[i].strip().startswith(marker):
        block.insert(0, lines[i].strip()[len(marker):].strip())
        i -= 1
    return " ".join(block)


def header_comment(lines):
    block = []
    for line in lines:
        if line.startswith("//"):
            block.append(line[2:].strip())
        else:
            break
    return " ".join(block)


def backends_in(text):
    return [name for name, pat in BACKEND_PATTERNS if re.search(pat, text)]


def unit_tests():
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "*.cpp"))):
        lines = open(path, encoding="utf-8").read().split("\n")
        text = "\n".join(lines)
        header = squash(header_comment(lines))
        file_backends = backends_in(text)
        starts = [i for i, l in enumerate(lines) if re.match(r"^(TEST|TEST_F|TEST_P)\(", l)]
        for n, i in enumerate(starts):
            m = re.match(r"^(TEST|TEST_F|TEST_P)\(\s*(\w+)\s*,\s*(\w+)\s*\)", lines[i])
            if not m:
                continue
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
            body = "\n".join(lines[i:end])
            backends = backends_in(body) or file_backends
            guards = squash(re.sub(r"^guards:\s*", "", comment_above(lines, i, "//"))) or header
            name = "%s.%s" % (m.group(2), m.group(3))
            if m.group(1) == "TEST_P":
                name += " (parametrized)"
            rows.append((name, UNIT_LAYERS.get(os.path.basename(path), "unit"),
                         ", ".join(backends) if backends else "host", guards, rel(path)))
    return rows


def pass_text_tests():
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "passes", "*.ir"))):
        text = open(path, encoding="utf-8").read()
        p = re.search(r"^; pass:\s*(\S+)", text, re.M)
        mu = re.search(r"^; mutation:\s*(\S+)", text, re.M)
        guards = "pass `%s` rewrites as expected; its mutation `%s` changes the output" % (
            p.group(1) if p else "?", mu.group(1) if mu else "none")
        rows.append(("Files/PassText.ExpectedOutputAndMutationCaught/" + os.path.basename(path)[:-3], "pass tests",
                     "host", guards, rel(path)))
    return rows


def ctest_entries():
    path = os.path.join(ROOT, "tests", "CMakeLists.txt")
    lines = open(path, encoding="utf-8").read().split("\n")
    rows, seen = [], set()
    for i, line in enumerate(lines):
        m = re.search(r"add_test\(NAME\s+(\S+)", line)
        if not m or m.group(1) in seen:
            continue
        seen.add(m.group(1))
        j = i
        while j + 1 < len(lines) and lines[j].count("(") > lines[j].count(")") and not lines[j + 1].strip() == "":
            j += 1
        cmd = " ".join(lines[i:j + 2])
        backends = set(re.findall(r"--backend (\w+)", cmd))
        # A script the entry runs counts too (its `"--backend", "X"` arguments).
        for script in re.findall(r"\$\{CMAKE_(?:CURRENT_)?SOURCE_DIR\}/([\w/.-]+\.py)", cmd):
            for base in (os.path.join(ROOT, "tests", script), os.path.join(ROOT, script)):
                if os.path.exists(base):
                    backends |= set(re.findall(r"\"--backend\",\s*\"(\w+)\"", open(base, encoding="utf-8").read()))
        backends = sorted(backends & {"vulkan", "cuda", "interp"})
        k = i
        while k > 0 and lines[k - 1].strip().startswith(("if(", "else(")):
            k -= 1
        guards = squash(comment_above(lines, k, "#")) or "(no comment above its add_test)"
        layer = m.group(1).split(".")[0]
        rows.append((m.group(1), layer, ", ".join(backends) if backends else "host", guards, rel(path)))
    return rows


def kernel_macros(macro):
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "kernels", "*", "*.cpp"))):
        text = open(path, encoding="utf-8").read()
        lines = text.split("\n")
        for m in re.finditer(r"^%s\(\s*(\w+)\s*,\s*(\w+)\s*,(.*?)\)\s*\{" % macro, text, re.M | re.S):
            line_index = text.count("\n", 0, m.start())
            # Dtype names in the macro's arguments, whatever form the tolerances take.
            dtypes = list(dict.fromkeys(re.findall(r"\b(f32|f16|bf16|i32|u32|bool)\b", m.group(3))))
            above = comment_above(lines, line_index, "//")
            g = re.match(r"guards:\s*(.*)", above)
            rows.append((m.group(1), m.group(2), dtypes, squash(g.group(1)) if g else "", rel(path)))
    return rows


def case_set(iron):
    env = dict(os.environ, IRON_NO_REBUILD="1")
    p = subprocess.run([iron, "list", "--case-set"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    m = re.search(r"^(\d+) cases, digest ([0-9a-f]{32})$", p.stdout, re.M)
    if p.returncode != 0 or not m:
        sys.exit("test-inventory: `%s list --case-set` failed: %s" % (iron, p.stdout + p.stderr))
    return int(m.group(1)), m.group(2)


def table(rows):
    out = ["| test | layer | backends | what it guards | where |", "|---|---|---|---|---|"]
    for name, layer, backends, guards, where in rows:
        out.append("| `%s` | %s | %s | %s | `%s` |" % (name, layer, backends, cell(guards), where))
    return out


def render(iron):
    unit = unit_tests()
    passes = pass_text_tests()
    ctest = ctest_entries()
    cases = kernel_macros("IRON_TEST_KERNEL")
    benches = kernel_macros("IRON_BENCH")
    count, digest = case_set(iron)
    case_rows = [("%s/%s" % (k, c), "corpus", "vulkan, interp (lane 32 and 8) in CI; cuda, vulkan on the H200",
                  g or "`%s` case `%s` against its CPU oracle at %s" % (k, c, ", ".join(d)), w)
                 for k, c, d, g, w in cases]
    bench_rows = [("%s/%s" % (k, b), "bench", "cuda on the H200; interp smoke in CI for iron_add/n4096",
                   g or "time of `%s` on `%s` at %s, after its oracle passes" % (k, b, ", ".join(d)), w)
                  for k, b, d, g, w in benches]
    out = [
        "# Test inventory",
        "",
        "<!-- Generated by scripts/test-inventory.py from the code; do not edit. Regenerate with",
        "     `make test-inventory`; CTest's docs.test_inventory_current fails when this file is stale. -->",
        "",
        "Every test Iron has, its layer ([testing.md](testing.md#the-layers)), the backends it runs on",
        "and what it guards. \"host\" means CPU-only code (no device). How the \"what it guards\" text is",
        "taken from the code is described in [testing.md](testing.md#test-inventory).",
        "",
        "| kind | count |",
        "|---|---|",
        "| GoogleTest tests (`tests/unit/`) | %d |" % len(unit),
        "| pass text tests (`tests/passes/`) | %d |" % len(passes),
        "| CLI and script CTest entries (`tests/CMakeLists.txt`) | %d |" % len(ctest),
        "| corpus cases (`IRON_TEST_KERNEL`) | %d |" % len(cases),
        "| benchmarks (`IRON_BENCH`) | %d |" % len(benches),
        "",
        "**Registered case set** (kernel/case/dtype with tolerance bits, `iron list --case-set`): "
        "**%d cases, digest `%s`**. A case dropped, added or retoleranced changes it; "
        "`iron test --witness` records the same digest for the cases a run covered." % (count, digest),
        "",
        "## GoogleTest tests",
        "",
    ] + table(unit) + ["", "## Pass text tests", ""] + table(passes) + ["", "## CTest entries", ""] + table(ctest) + [
        "", "## Corpus cases", ""] + table(case_rows) + ["", "## Benchmarks", ""] + table(bench_rows) + [""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description="Generate docs/test-inventory.md from the code")
    ap.add_argument("--iron", required=True, help="the iron binary (for `iron list --case-set`)")
    ap.add_argument("--check", action="store_true", help="compare with the committed doc instead of writing it")
    args = ap.parse_args()
    text = render(args.iron)
    if args.check:
        current = open(DOC, encoding="utf-8").read() if os.path.exists(DOC) else ""
        if current == text:
            print("test-inventory: current (%s)" % rel(DOC))
            return 0
        sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True), "committed", "generated",
                                                   n=1))
        print("\ntest-inventory: STALE: %s differs from the code; run `make test-inventory` and commit it" % rel(DOC))
        return 1
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(text)
    print("test-inventory: wrote %s" % rel(DOC))
    return 0


if __name__ == "__main__":
    sys.exit(main())
