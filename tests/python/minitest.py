#!/usr/bin/env python3
"""Runs tests/python's test files where pytest is not installed (the GPU machine's Python may lack
it): the small part of pytest those files use, no more — fixtures with params (module scope),
stacked parametrize, skipif, raises(match=), skip (also at module level), fail, importorskip.
Prints one line per test and pytest's summary line; exits 1 when a test failed.

  minitest.py FILE.py [FILE.py ...] [-k SUBSTRING]
With pytest installed, run pytest instead: the files are ordinary pytest files.
"""

import importlib.util
import itertools
import re
import sys
import traceback
import types


class Skipped(Exception):
    pass


class Failed(AssertionError):
    pass


class _Raises:
    def __init__(self, exc, match):
        self.exc, self.match = exc, match

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            raise Failed("DID NOT RAISE %s" % self.exc.__name__)
        if not issubclass(et, self.exc):
            return False
        if self.match and not re.search(self.match, str(ev)):
            raise Failed("Regex pattern did not match.\n Regex: %r\n Input: %r" % (self.match, str(ev)))
        self.value = ev
        return True


def _mark(kind, payload):
    def deco(fn):
        fn.__dict__.setdefault("_marks", []).append((kind, payload))
        return fn
    return deco


def _fixture(fn=None, scope="function", params=None):
    def deco(f):
        f._fixture = {"params": params}
        return f
    return deco(fn) if fn is not None else deco


def _skip(msg="", allow_module_level=False):
    raise Skipped(msg)


def _fail(msg=""):
    raise Failed(msg)


def _importorskip(name):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise Skipped("could not import %s: %s" % (name, e))


def install():
    m = types.ModuleType("pytest")
    m.raises = lambda exc, match=None: _Raises(exc, match)
    m.skip = _skip
    m.fail = _fail
    m.importorskip = _importorskip
    m.fixture = _fixture
    m.mark = types.SimpleNamespace(
        parametrize=lambda names, values: _mark("parametrize", (names, values)),
        skipif=lambda cond, reason="": _mark("skipif", (cond, reason)))
    sys.modules["pytest"] = m


class _Request:
    def __init__(self, param):
        self.param = param


def _cases(module, fn):
    """(id, kwargs, skip reason or None) for every parametrization of a test function."""
    argnames = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    axes, skip = [], None
    for kind, payload in reversed(fn.__dict__.get("_marks", [])):
        if kind == "skipif" and payload[0]:
            skip = payload[1] or "skipif"
        if kind == "parametrize":
            names = [n.strip() for n in payload[0].split(",")]
            axes.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in payload[1]])
    fixtures = []
    for a in argnames:
        f = getattr(module, a, None)
        if f is not None and hasattr(f, "_fixture"):
            params = f._fixture["params"]
            fixtures.append((a, f, params if params is not None else [None]))
    fixture_axes = [[(a, f, p) for p in params] for a, f, params in fixtures]
    for combo in itertools.product(*(fixture_axes + axes)):
        kwargs, ids, fix = {}, [], []
        for part in combo:
            if isinstance(part, tuple):
                fix.append(part)
                ids.append(str(part[2]))
            else:
                kwargs.update(part)
                ids.extend(str(v) for v in part.values())
        yield "-".join(ids), kwargs, fix, skip


def run(paths, keyword):
    install()
    passed = failed = skipped = 0
    cache = {}
    for path in paths:
        name = "minitest_" + re.sub(r"\W", "_", path)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Skipped as e:
            print("%s SKIPPED (%s)" % (path, e))
            skipped += 1
            continue
        except Exception:
            print("%s FAILED (importing the file)" % path)
            traceback.print_exc()
            failed += 1
            continue
        for attr in dir(module):
            fn = getattr(module, attr)
            if not (attr.startswith("test_") and callable(fn)):
                continue
            for case_id, kwargs, fix, skip in _cases(module, fn):
                label = "%s::%s%s" % (path, attr, "[%s]" % case_id if case_id else "")
                if keyword and keyword not in label:
                    continue
                if skip:
                    print(label + " SKIPPED (" + skip + ")")
                    skipped += 1
                    continue
                try:
                    for a, f, p in fix:
                        key = (path, a, repr(p))
                        if key not in cache:
                            cache[key] = f(_Request(p)) if f.__code__.co_argcount else f()
                        kwargs[a] = cache[key]
                    fn(**kwargs)
                    print(label + " PASSED")
                    passed += 1
                except Skipped as e:
                    print(label + " SKIPPED (%s)" % e)
                    skipped += 1
                except Exception:
                    print(label + " FAILED")
                    traceback.print_exc()
                    failed += 1
    parts = ["%d passed" % passed] + (["%d failed" % failed] if failed else []) + (["%d skipped" % skipped] if skipped else [])
    print(", ".join(parts))
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    kw = None
    if "-k" in args:
        i = args.index("-k")
        kw = args[i + 1]
        del args[i:i + 2]
    sys.exit(run(args, kw))
