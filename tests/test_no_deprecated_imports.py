"""The course's own code uses no deprecated name: importing any module of ``lmcourse`` emits no
DeprecationWarning, so the course's own commands never warn about themselves.

The modules are imported in a fresh interpreter, because a module's import-time warning fires only
on its first import and this process has imported most of the package already.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

# Every module is imported with DeprecationWarning raised as an error; a module that fails is
# reported with the warning and the line (in a course file) that caused it, then the walk goes on.
CHILD = r"""
import importlib, json, pkgutil, sys, traceback, warnings

warnings.simplefilter("error", DeprecationWarning)
failures = {}


def record(name):
    error = sys.exc_info()[1]
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "/lmcourse/" in f.filename]
    where = f"{frames[-2].filename}:{frames[-2].lineno}" if len(frames) > 1 else "?"
    failures[name] = f"{type(error).__name__}: {error} (at {where})"


import lmcourse

# walk_packages imports each package to list what is inside; onerror catches a package that warns
names = [m.name for m in pkgutil.walk_packages(lmcourse.__path__, "lmcourse.", onerror=record)]
for name in names:
    if name in failures:
        continue
    try:
        importlib.import_module(name)
    except Exception:
        record(name)
print(json.dumps({"imported": len(names), "failures": failures}))
"""


def test_no_course_module_warns_on_import():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["imported"] > 50, report   # the walk found the package, not an empty folder
    assert not report["failures"], "\n".join(f"{name}: {why}" for name, why in sorted(report["failures"].items()))
