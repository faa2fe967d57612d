"""iron.test() and iron.bench(): the `iron` CLI's test and bench commands run from Python, their
JSON-lines records parsed."""

import json
import os
import pathlib
import subprocess

from . import _native as _n
from ._native import IronError


def cli_path():
    """The `iron` executable: $IRON_CLI, else the one installed with the package, else the one
    beside libiron_c.so's build (build/bin/iron for build/lib/libiron_c.so) or beside the library
    itself (a bundle that holds both)."""
    env = os.environ.get("IRON_CLI")
    candidates = [pathlib.Path(env)] if env else [
        pathlib.Path(__file__).resolve().parent / "_lib" / "iron",
        _n.LIB_PATH.parent.parent / "bin" / "iron",
        _n.LIB_PATH.parent / "iron",
    ]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise IronError("the iron CLI was not found (tried: %s); set IRON_CLI" % ", ".join(str(c) for c in candidates))


class Report:
    """What a `iron test` / `iron bench` run printed: records (every JSON record: "test", "bench",
    "device", "summary", ...), the results of the kind asked for (results), the exit status and
    the text that was not JSON (the human summary and any error)."""

    def __init__(self, command, returncode, records, text):
        self.command = command
        self.returncode = returncode
        self.records = records
        self.text = text

    def of_type(self, kind):
        return [r for r in self.records if r.get("type") == kind]

    @property
    def results(self):
        return self.of_type("test") + self.of_type("bench")

    @property
    def summary(self):
        s = self.of_type("summary")
        return s[-1] if s else {}

    @property
    def ok(self):
        return self.returncode == 0

    def __repr__(self):
        return "<iron.Report %s rc=%d %d results>" % (" ".join(self.command[1:3]), self.returncode, len(self.results))


def _run(command, args, check, filter, backend, dtype, extra):
    cmd = [str(cli_path()), command, "--json"]
    if filter:
        cmd += ["-f", filter]
    if backend:
        cmd += ["--backend", backend]
    if dtype:
        cmd += ["--dtype", dtype]
    for k, v in extra.items():
        if v is not None and v is not False:
            cmd += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
    cmd += [str(a) for a in args]
    env = dict(os.environ)
    env.setdefault("IRON_NO_REBUILD", "1")  # run the runner that was built, never rebuild it from Python
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    records, text = [], []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
                continue
            except ValueError:
                pass
        text.append(line)
    report = Report(cmd, proc.returncode, records, "\n".join(text))
    if check and proc.returncode != 0:
        raise IronError("`%s` exited with %d:\n%s" % (" ".join(cmd), proc.returncode, report.text.strip()[-4000:]))
    return report


def test(filter=None, backend=None, dtype=None, *args, check=True, **flags):
    """`iron test --json [-f FILTER] [--backend B] [--dtype D] [flags] [args]`: the kernel corpus
    against its oracles. Returns a Report; raises IronError when the run fails and check is true."""
    return _run("test", args, check, filter, backend, dtype, flags)


def bench(filter=None, backend=None, dtype=None, *args, check=True, **flags):
    """`iron bench --json ...`: the registered benchmarks (flags such as samples=20, warmup=5,
    flush_l2=True or flush_l2_read=True). Returns a Report whose results are the bench records (samples_us, stats, metrics)."""
    return _run("bench", args, check, filter, backend, dtype, flags)
