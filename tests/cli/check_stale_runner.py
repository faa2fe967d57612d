#!/usr/bin/env python3
"""A failed rebuild of iron-runner must end the command with the compiler's error and exit 2,
never run the binary that is still there (issue 7: "a stale binary passes").

Builds a throw-away CMake tree whose `iron-runner` target does not compile, puts a copy of the
real `iron` and a stale copy of the real runner in its bin/ folder, and runs `iron test` and
`iron inspect` from there with IRON_BUILD_DIR pointing at it. Then checks that IRON_NO_REBUILD=1
still runs the existing runner on purpose, and that a copy outside any build tree never
rebuilds. Usage: check_stale_runner.py BUILD_BIN_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys


def run(cmd, env, cwd=None):
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    src = os.path.join(work, "src")
    build = os.path.join(work, "build")
    os.makedirs(src)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.20)\nproject(stale LANGUAGES CXX)\n"
                "add_executable(iron-runner runner.cpp)\n"
                "set_target_properties(iron-runner PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n")
    with open(os.path.join(src, "runner.cpp"), "w") as f:
        f.write("int main() { return this_does_not_compile_kernel_file; }\n")
    env = dict(os.environ)
    env.pop("IRON_NO_REBUILD", None)
    env.pop("IRON_RUNNER", None)
    rc, out, err = run(["cmake", "-S", src, "-B", build, "-G", "Ninja"], env)
    if rc != 0:
        print("setup: cmake configure failed:\n" + out + err)
        return 1
    os.makedirs(os.path.join(build, "bin"), exist_ok=True)
    for name in ("iron", "iron-runner"):  # iron-runner: the stale binary that would pass
        shutil.copy2(os.path.join(bin_dir, name), os.path.join(build, "bin", name))
    iron = os.path.join(build, "bin", "iron")
    env["IRON_BUILD_DIR"] = build
    failures = []

    def expect(label, cmd, env, want_rc, must=(), must_not=()):
        rc, out, err = run(cmd, env)
        text = out + err
        bad = []
        if rc != want_rc:
            bad.append("exit %d, expected %d" % (rc, want_rc))
        bad += ["missing %r" % m for m in must if m not in text]
        bad += ["unexpected %r" % m for m in must_not if m in text]
        print("%s %s" % ("ok  " if not bad else "FAIL", label))
        if bad:
            failures.append(label)
            print("    " + "; ".join(bad) + "\n    output:\n" + text[-3000:])

    for label, args in (("test", ["test", "--backend", "interp", "-f", "iron_add/n1003", "--dtype", "f32"]),
                        ("inspect", ["inspect", "iron_add"]),
                        ("list", ["list"])):
        expect("a failed rebuild stops `iron %s` with the compiler's error" % label, [iron] + args, env, 2,
               must=("this_does_not_compile_kernel_file", "rebuilding iron-runner in", "not running the stale binary"),
               must_not=("PASS", "passed"))
    on_purpose = dict(env, IRON_NO_REBUILD="1")
    expect("IRON_NO_REBUILD=1 runs the existing runner", [iron, "test", "--backend", "interp", "-f", "iron_add/n1003",
                                                        "--dtype", "f32"], on_purpose, 0,
           must=("1 passed, 0 failed",), must_not=("this_does_not_compile",))
    copied = os.path.join(work, "copied")
    os.makedirs(copied)
    for name in ("iron", "iron-runner"):
        shutil.copy2(os.path.join(bin_dir, name), os.path.join(copied, name))
    expect("a copy outside the build tree never rebuilds", [os.path.join(copied, "iron"), "test", "--backend", "interp",
                                                            "-f", "iron_add/n1003", "--dtype", "f32"], env, 0,
           must=("1 passed, 0 failed",), must_not=("this_does_not_compile",))
    print("check_stale_runner: %s" % ("ok" if not failures else "FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
