"""A progressive release: ``lmcourse release OUT --through NN``.

A student working on notebook NN gets the notebooks up to NN and the course's reference code of the
notebooks before it (what NN uses as given code), not the code that answers NN or a later
notebook: those reference modules are removed from the released package, and NN's visible tests
judge against expected values recorded for their inputs (``lmcourse/marking/expected/NN.json``,
read by :func:`lmcourse.marking.kernel.recorded_expected`).

Only a notebook graded from records (:mod:`lmcourse.marking.notebooks`) can be released this way:
its visible tests need nothing but the recorded values. A notebook not yet converted compares in the
kernel against its reference, so ``--through`` refuses it with a message saying so. What a
notebook uses as given code and still holds working answers (08's tokenizer in ``lmcourse.bpe``,
09's trained model in ``lmcourse.nn.seq2seq``) ships: :data:`GIVEN_WITH_ANSWERS` names it, and the
release's message says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

__all__ = ["GIVEN_WITH_ANSWERS", "ThroughError", "narrow"]

# given code a notebook's own cells run that still does some of its exercises' work (said, not hidden)
GIVEN_WITH_ANSWERS = {"03_attention": ("lmcourse.nn.attention",), "05_gpt": ("lmcourse.nn.gpt",),
                      "08_bpe": ("lmcourse.bpe",), "09_encoder_decoder": ("lmcourse.nn.seq2seq",)}


class ThroughError(ValueError):
    """``--through`` asked for what cannot be released that way; the message says why."""


def _number(name: str) -> int:
    return int(name[:2])


def _module_files(package_root: Path, module: str) -> list[Path]:
    rel = Path(*module.split(".")[1:])
    found = [p for p in (package_root / rel.with_suffix(".py"), package_root / rel / "__init__.py") if p.is_file()]
    return found


def _topic_reference(package_root: Path, notebook: str) -> list[Path]:
    """A notebook's reference module by the layout's rule (``lmcourse/reference/<topic>.py``)."""
    path = package_root / "reference" / f"{notebook[3:]}.py"
    return [path] if path.is_file() else []


def narrow(out: Path, notebooks: list[str], through: str) -> str:
    """In the release at ``out``: keep the notebooks up to ``through``, remove the reference of
    ``through`` and every later notebook, write ``through``'s recorded expected values, and check
    that every released module still imports. Returns a line for the release's message."""
    from lmcourse.marking import kernel
    from lmcourse.marking.notebooks import TESTS, load

    if through not in notebooks:
        raise ThroughError(f"no notebook {through!r} (the notebooks: {', '.join(notebooks)})")
    if through not in TESTS:
        raise ThroughError(f"{through} still checks its visible tests against its reference in the kernel, so "
                           f"its release must ship it; --through works for the notebooks graded from records: "
                           f"{', '.join(sorted(TESTS))}")
    package = out / "lmcourse"
    removed: list[str] = []
    for name in notebooks:
        if _number(name) < _number(through):
            continue
        if _number(name) > _number(through):
            (out / "notebooks" / f"{name}.ipynb").unlink(missing_ok=True)
        files = ([f for m in load(name).withheld for f in _module_files(package, m)] if name in TESTS
                 else _topic_reference(package, name))
        for f in files:
            f.unlink()
            removed.append(str(f.relative_to(out)))
    # a reference module of no earlier notebook (one whose notebook is not built yet) goes too
    earlier = {n[3:] for n in notebooks if _number(n) < _number(through)}
    for f in sorted((package / "reference").glob("*.py")):
        if f.name != "__init__.py" and f.stem not in earlier:
            f.unlink()
            removed.append(str(f.relative_to(out)))
    expected = package / "marking" / kernel.EXPECTED_DIR
    expected.mkdir(exist_ok=True)
    (expected / f"{through}.json").write_text(json.dumps(kernel.expected_table(through), sort_keys=True),
                                              encoding="utf-8")
    _check_imports(out)
    given = [m for n, ms in GIVEN_WITH_ANSWERS.items() if _number(n) >= _number(through) and
             (out / "notebooks" / f"{n}.ipynb").exists() for m in ms]
    return (f"through {through}: {len(removed)} reference module(s) of {through} and later left out"
            + (f"; given code that still does some of {through}'s work ships: {', '.join(given)}" if given else ""))


def _check_imports(out: Path) -> None:
    """Every module of the released package imports (a removed reference must not be one a kept
    module needs), in a fresh interpreter that sees the release only."""
    code = ("import importlib, pkgutil, sys, lmcourse\n"
            "bad = []\n"
            "for m in pkgutil.walk_packages(lmcourse.__path__, 'lmcourse.'):\n"
            "    try:\n"
            "        importlib.import_module(m.name)\n"
            "    except ImportError as e:\n"
            "        bad.append(f'{m.name}: {e}')\n"
            "print('\\n'.join(bad)); sys.exit(1 if bad else 0)\n")
    # the release's folder first on the path (cwd), as a student's `pip install -e .` there would put it
    code = f"import lmcourse; assert lmcourse.__file__.startswith({str(out.resolve())!r}), lmcourse.__file__\n" + code
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=out.resolve(), capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise ThroughError("the narrowed release does not import (a kept module needs a removed reference):\n  "
                           + proc.stdout.strip().replace("\n", "\n  ") + proc.stderr[-500:])
