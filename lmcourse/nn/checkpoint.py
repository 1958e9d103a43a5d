"""Saving a model with its config, and building it back: one format for every model in ``lmcourse.nn``.

A saved model is a ``torch.save`` dict::

    {"config": {...},        # the model's config dataclass as a dict (GPTConfig, MLMConfig, ...)
     "model": {...},         # its state dict, every tensor on the CPU
     "vocabulary": [...],    # the tokenizer's vocabulary, or None
     ...}                    # anything else the caller adds (profile, val_loss, steps, ...)

A training checkpoint of :func:`lmcourse.train.train` has the same ``config`` and ``model``
keys (plus the optimizer, samplers and history), so :func:`lmcourse.nn.load_gpt` reads both.

Loading, the same for every model: a config setting the config class does not know stops the
load with :class:`ModelCheckpointError` naming it (dropping it would build another model than
the one saved); a setting missing from the saved config takes the config class's default
(notebook 05 saves the student's own GPT, whose config has only the settings it uses, and the
given GPT's extra settings default to what that GPT does). The weights must match exactly: an
unknown or a missing one is named in the error.
"""

from __future__ import annotations

import os
import pickle
import re
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path

import torch
from torch import nn

__all__ = ["ModelCheckpointError", "config_dict", "model_state", "write_checkpoint", "save_model",
           "load_model", "read_saved"]


class ModelCheckpointError(ValueError):
    """A saved model does not fit the model asked for; the message names the keys."""


def read_saved(path: str | Path, map_location="cpu", error: type[Exception] | None = None) -> object:
    """What ``torch.save`` wrote to ``path``, read as data only (``weights_only``): a saved model, a
    training checkpoint or a course run holds tensors and plain values, and a file whose pickle names
    any other code is not one of them (raised as ``error``, default :class:`ModelCheckpointError`)."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        said = re.search(r"GLOBAL (\S+)", str(e))
        what = (f"holds more than tensors and plain values (its pickle names {said.group(1)}), so lmcourse did "
                "not write it and does not run it" if said else
                f"is not a file torch.save wrote ({_torch_reason(e)})")
        raise (error or ModelCheckpointError)(
            f"{path} {what}; save the model again with lmcourse (save_model, lmcourse train)") from None


def _torch_reason(e: Exception) -> str:
    # torch's message is a page of advice around one line that says what it found
    found = re.search(r"Unpickler error:\s*(\S.*)", str(e))
    return found.group(1).strip() if found else type(e).__name__


def config_dict(model: nn.Module) -> dict | None:
    """The model's ``config`` as a plain dict (a dataclass or a dict), or None when it has none."""
    config = getattr(model, "config", None)
    if is_dataclass(config) and not isinstance(config, type):
        return asdict(config)
    return dict(config) if isinstance(config, dict) else None


def model_state(model: nn.Module, vocabulary: list[str] | None = None, **extra) -> dict:
    """The saved form of ``model``: its config, its weights on the CPU, the vocabulary, ``extra``."""
    return {"config": config_dict(model),
            "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
            "vocabulary": vocabulary, **extra}


def write_checkpoint(state: dict, path: str | Path) -> Path:
    """``torch.save(state)`` to ``path`` through a temporary file, so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def save_model(model: nn.Module, path: str | Path, vocabulary: list[str] | None = None, **extra) -> Path:
    """Write ``model`` (config, weights, vocabulary, ``extra``) to ``path``; returns the path."""
    return write_checkpoint(model_state(model, vocabulary, **extra), path)


def _keys(names) -> str:
    return ", ".join(sorted(names))


def load_model(path: str | Path, model_class: type[nn.Module], config_class: type,
               device: torch.device | str = "cpu") -> tuple[nn.Module, dict]:
    """``model_class(config_class(**saved config))`` with the saved weights, in eval mode on
    ``device``, and the rest of what was saved (vocabulary, extras; the config and weights removed).
    """
    state = read_saved(path, device)
    what = f"{path} ({model_class.__name__})"
    config = state.pop("config", None)
    if not isinstance(config, dict) or "model" not in state:
        raise ModelCheckpointError(f"{what}: not a saved model (it needs a 'config' dict and 'model' weights)")
    known = {f.name for f in fields(config_class)}
    unknown = set(config) - known  # a missing setting takes the config class's default
    if unknown:
        raise ModelCheckpointError(f"{what}: the saved config has settings {config_class.__name__} does not know: "
                                   f"{_keys(unknown)}. It was written for another model or by another version of "
                                   "lmcourse: save it again with this version")
    model = model_class(config_class(**config))
    weights = state.pop("model")
    expected = model.state_dict()
    unknown, missing = set(weights) - set(expected), set(expected) - set(weights)
    misfit = {k for k in set(weights) & set(expected) if tuple(weights[k].shape) != tuple(expected[k].shape)}
    if unknown or missing or misfit:
        parts = ([f"weights this {model_class.__name__} has no place for: {_keys(unknown)}"] if unknown else []) + \
                ([f"weights missing: {_keys(missing)}"] if missing else []) + \
                ([f"weights of another shape than the config makes: {_keys(misfit)}"] if misfit else [])
        raise ModelCheckpointError(f"{what}: {'; '.join(parts)}")
    model.load_state_dict(weights)
    return model.to(device).eval(), state
