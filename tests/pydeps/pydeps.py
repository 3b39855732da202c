"""Makes the PyPI packages of tests/pydeps/requirements.txt importable, or
skips the calling test (exit 77) saying why they are not there.

    import pydeps            # from a test in tests/ (sys.path has tests/pydeps)
    pydeps.require("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
"""
import importlib
import os
import sys

DIR = os.environ.get("MARK_PYDEPS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", ".pydeps")


def require(*modules):
    """Imports MODULES from the pydeps directory and returns them; exits 77
    with the reason when they cannot be imported."""
    if os.path.isdir(DIR) and DIR not in sys.path:
        sys.path.insert(0, DIR)
    got = []
    for name in modules:
        try:
            got.append(importlib.import_module(name))
        except ImportError as e:
            why = ""
            failed = os.path.join(DIR, ".failed")
            if os.path.exists(failed):
                why = " (" + open(failed).read().strip().replace("\n", " ") + ")"
            print("SKIP: the Python module %s is not installed in %s: %s%s; "
                  "run `make deps-test` (tests/pydeps/install.sh) with access to PyPI"
                  % (name, DIR, e, why))
            sys.exit(77)
    return got[0] if len(got) == 1 else got
