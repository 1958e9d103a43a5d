"""The models ``lmcourse train`` trains: one module per model, each defining ``TASK``, a
:class:`~lmcourse.commands.tasks.task.Task` (:mod:`.task` says what one is). :func:`discover` finds them,
so a notebook whose model the command should train adds its module here and edits nothing else; the
driver (:mod:`lmcourse.commands.train`) trains any of them."""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["discover"]


def discover() -> dict:
    """``{name: Task}`` of every module of this package but :mod:`.task`, by name."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "task":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        task = getattr(module, "TASK", None)
        if task is None or task.name in found:
            raise ImportError(f"{module.__name__}: a task module defines TASK, a Task with a name of its own "
                              f"({'no TASK' if task is None else repr(task.name) + ' is taken'})")
        found[task.name] = task
    return found
