#!/usr/bin/env python3
"""Every package the build, tests and benchmarks use is in the Makefile's lists.

`make demo` installs DEB_BUILD, `make test` adds DEB_TEST, `make bench` adds
DEB_BENCH.  A fresh Debian 12 machine has none of them, so a module that
CMake requires but that the matching list does not install breaks the target
there while passing on a developer's machine (issue 16: `make demo` stopped
at "Package 'babeltrace2' not found").  This check finds what the CMake
files and the Python tests ask for, asks dpkg which package provides it, and
fails when that package is not in the list of the target that needs it.

    check_deps.py SOURCE_DIR

What it resolves:
  pkg_check_modules(...)   the .pc file's package
  find_program(VAR name)   the program's package
  import X in tests/ and bench/ Python, outside the standard library
    (except, in tests/, the PyPI modules of tests/pydeps/requirements.txt)
A module or program that is not installed cannot be resolved; a REQUIRED one
is a failure (the build needs it), an optional one is reported as unchecked.
"""
import ast
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")


def makefile_lists():
    text = open(os.path.join(src, "Makefile")).read().replace("\\\n", " ")
    lists = {}
    for name in ("DEB_BUILD", "DEB_TEST", "DEB_BENCH"):
        m = re.search(r"^%s\s*=(.*)$" % name, text, re.M)
        if not m:
            sys.exit("check_deps: Makefile has no %s list" % name)
        lists[name] = set(m.group(1).split())
    return lists


def dpkg_owner(path):
    """The package that installed PATH, or None."""
    real = os.path.realpath(path)
    for p in (path, real):
        r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            # "pkg:arch: /path" or "pkg1, pkg2: /path" (diversions aside)
            owner = r.stdout.splitlines()[0].rsplit(": ", 1)[0]
            return owner.split(",")[0].strip().split(":")[0]
    return None


def pc_file(module):
    r = subprocess.run(["pkg-config", "--variable=pcfiledir", module], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return os.path.join(r.stdout.strip(), module + ".pc")


def pypi_modules():
    """Top-level modules that tests/pydeps/requirements.txt installs from PyPI
    (its "# provides:" line); the tests import them through pydeps.require()."""
    path = os.path.join(src, "tests", "pydeps", "requirements.txt")
    if not os.path.exists(path):
        return set()
    m = re.search(r"^# provides:(.*)$", open(path).read(), re.M)
    return set(m.group(1).split()) if m else set()


def needed_by(path):
    """Which Makefile list must hold what a file at PATH (relative) uses."""
    top = path.split(os.sep)[0]
    # tests/bench/ tests the benchmarks' own tools (report.py's plots): what
    # `make bench` installs, and they skip without it.  Judged by DEB_TEST
    # alone they failed this check exactly on a machine that had run
    # `make bench` (matplotlib installed, so resolvable), and passed elsewhere.
    if top == "bench" or path.startswith(os.path.join("tests", "bench") + os.sep):
        return ("DEB_BUILD", "DEB_TEST", "DEB_BENCH")
    if top == "tests":
        return ("DEB_BUILD", "DEB_TEST")
    return ("DEB_BUILD",)


def cmake_files():
    skip = re.compile(r"^(build[^/]*|\.git)/")
    for path in glob.glob(os.path.join(src, "**", "CMakeLists.txt"), recursive=True) + \
            glob.glob(os.path.join(src, "**", "*.cmake"), recursive=True):
        rel = os.path.relpath(path, src)
        if not skip.match(rel):
            yield rel


def requirements():
    """(file, kind, name, required, path-or-None) for everything asked for."""
    for rel in cmake_files():
        text = open(os.path.join(src, rel)).read()
        for m in re.finditer(r"pkg_check_modules\s*\(([^)]*)\)", text):
            words = m.group(1).split()
            required = "REQUIRED" in words
            for mod in words[1:]:
                if mod in ("REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH",
                           "NO_CMAKE_ENVIRONMENT_PATH"):
                    continue
                mod = re.split(r"[<>=]", mod)[0]
                yield rel, "pkg-config module", mod, required, pc_file(mod)
        for m in re.finditer(r"find_program\s*\(\s*(\w+)\s+([^)]*)\)", text):
            words = m.group(2).split()
            names = words[1:words.index("PATHS")] if words and words[0] == "NAMES" and "PATHS" in words \
                else (words[1:] if words and words[0] == "NAMES" else words[:1])
            required = "REQUIRED" in words
            path = next((shutil.which(n) for n in names if shutil.which(n)), None)
            yield rel, "program", "/".join(names), required, path
    stdlib = set(sys.stdlib_module_names)
    pypi = pypi_modules()
    for py in glob.glob(os.path.join(src, "tests", "**", "*.py"), recursive=True) + \
            glob.glob(os.path.join(src, "bench", "**", "*.py"), recursive=True):
        rel = os.path.relpath(py, src)
        local = {os.path.splitext(f)[0] for f in os.listdir(os.path.dirname(py))}
        mods = set()
        for node in ast.walk(ast.parse(open(py).read(), py)):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods.add(node.module.split(".")[0])
        for mod in sorted(mods):
            if mod in stdlib or mod in local or mod == "__future__":
                continue
            if mod in pypi and rel.split(os.sep)[0] == "tests":
                continue    # pip installs it (tests/pydeps), not apt
            spec = importlib.util.find_spec(mod)
            origin = spec.origin if spec and spec.origin not in (None, "built-in") else None
            if spec and origin is None and spec.submodule_search_locations:
                origin = list(spec.submodule_search_locations)[0]
            # A module the tests import only where it is installed is optional:
            # they skip with a reason without it (bench plots, for example).
            yield rel, "python module", mod, False, origin


def main():
    lists = makefile_lists()
    failures, checked, unchecked = [], 0, []
    for rel, kind, name, required, path in requirements():
        allowed = needed_by(rel)
        if path is None:
            if required:
                failures.append("%s: %s %s is required but not installed here, so its Debian "
                                "package cannot be found; install it and add it to %s"
                                % (rel, kind, name, allowed[-1]))
            else:
                unchecked.append("%s %s (%s; not installed, optional)" % (kind, name, rel))
            continue
        pkg = dpkg_owner(path)
        if pkg is None:
            failures.append("%s: %s %s at %s belongs to no Debian package; install it from one "
                            "and list that package in %s" % (rel, kind, name, path, allowed[-1]))
            continue
        checked += 1
        if not any(pkg in lists[l] for l in allowed):
            failures.append("%s: %s %s comes from the Debian package %s, which none of %s installs; "
                            "add it to %s in the Makefile" % (rel, kind, name, pkg, "/".join(allowed),
                                                             allowed[-1]))
    for u in unchecked:
        print("not checked:", u)
    for f in failures:
        print("FAIL:", f)
    print("%d requirements checked against the Makefile's package lists, %d failures"
          % (checked, len(failures)))
    return 1 if failures else 0


sys.exit(main())
