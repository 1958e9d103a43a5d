"""Run notebooks headlessly with nbclient (self-learners without a browser, and the tests)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def execute_notebook(path: Path, out: Path | None = None, profile: str | None = None,
                     timeout: int = 600, cwd: Path | None = None) -> nbformat.NotebookNode:
    """Execute ``path`` top to bottom (raising on the first error); save to ``out`` if given."""
    nb = nbformat.read(path, as_version=4)
    env_before = os.environ.get("LMCOURSE_PROFILE")
    if profile:
        os.environ["LMCOURSE_PROFILE"] = profile  # the kernel inherits our environment
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(cwd or path.parent)}})
        client.execute()
    finally:
        if profile:
            if env_before is None:
                os.environ.pop("LMCOURSE_PROFILE", None)
            else:
                os.environ["LMCOURSE_PROFILE"] = env_before
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out)
    return nb


def solution_namespace(name: str, cell_ids: tuple[str, ...], root: Path | None = None) -> dict:
    """Execute the named cells of ``solutions/<name>.ipynb`` (cell ids are the grade ids) in a
    fresh namespace and return it, so benchmarks time exactly the code a notebook teaches."""
    from .build import repo_root

    nb = nbformat.read(Path(root or repo_root()) / "solutions" / f"{name}.ipynb", as_version=4)
    by_id = {c.id: c for c in nb.cells}
    missing = [cid for cid in cell_ids if cid not in by_id]
    if missing:
        raise KeyError(f"solutions/{name}.ipynb has no cell(s) {missing}")
    ns: dict = {}
    for cid in cell_ids:
        exec(compile(by_id[cid].source, f"<{name}:{cid}>", "exec"), ns)  # noqa: S102 (our own notebook)
    return ns


def run_notebooks(paths: list[Path], out_dir: Path, profile: str | None = None) -> int:
    failures = 0
    for path in paths:
        start = time.perf_counter()
        target = out_dir / path.name
        try:
            execute_notebook(path, target, profile=profile)
            print(f"ok    {path.name}  {time.perf_counter() - start:6.1f} s  -> {target}")
        except CellExecutionError as exc:
            failures += 1
            first = str(exc).strip().splitlines()[-1] if str(exc).strip() else "error"
            print(f"FAIL  {path.name}: {first}  (partial output in {target})")
    return 1 if failures else 0
