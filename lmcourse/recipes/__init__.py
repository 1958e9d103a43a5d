"""Each training notebook's recipe, per profile, written once.

A recipe is the model's sizes, the run's :class:`lmcourse.train.TrainConfig` and the notebook's own
sizes (data, evaluation) at one profile (``tiny``, ``cpu``, ``gpu``), as a frozen dataclass. The
notebook's master, ``lmcourse train``, the benches and the tests all read it from here, so a change of
sizes is one edit::

    from lmcourse.recipes import gpt
    R = gpt.recipe("cpu")
    config = GPTConfig(vocab_size=tok.vocab_size, **R.model_sizes())
    cfg = R.train_config(seed=0, quiet=True)

One module per notebook that trains a model of its own, naming it in a ``NOTEBOOK = "NN_topic"`` line
(:data:`BY_NOTEBOOK` finds them: a new notebook adds its module and edits nothing here). Fields a caller
sets (seed, device, checkpoint, progress) stay the caller's.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["BY_NOTEBOOK"]


def _discover() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        notebook = getattr(module, "NOTEBOOK", None)
        if notebook is None or notebook in found:
            raise ImportError(f"{module.__name__}: a recipe module names its notebook once, in a line "
                              f'NOTEBOOK = "NN_topic" ({notebook!r} is missing or already {found.get(notebook)})')
        found[notebook] = module
    return dict(sorted(found.items()))


# the notebook each recipe module belongs to (its master: autograder/masters/<name>.py)
BY_NOTEBOOK = _discover()
