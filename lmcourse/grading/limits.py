"""The per-submission limits of ``lmcourse grade``: the one place their defaults are written
(the command's flags are made from these fields; this module imports nothing heavy, so the
command-line parser can read it)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


def _flag(default, help: str):
    """A limit the TA sets with ``--<name-with-dashes>``; ``help`` says what it limits."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Limits:
    """Per-submission limits (defaults are generous for a healthy notebook in the tiny profile,
    which autogrades in seconds)."""
    notebook_timeout: float = _flag(600.0, "whole notebook, wall clock, s: the process tree is killed")
    cell_timeout: int = _flag(120, "one cell, s: it is interrupted and the rest is graded")
    memory_mb: int = _flag(4096, "memory cap per submission, MB (address space of the runner and "
                                 "the kernel)")
    output_chars: int = _flag(1_000_000, "printed output kept per notebook, characters")
    processes: int = _flag(256, "processes and threads per sandbox (RLIMIT_NPROC)")
    disk_mb: int = _flag(256, "everything a kernel writes, MB (its working folder, home, /tmp and "
                              "course cache, one size-capped folder in memory)")
    seed: int = 0                     # random, numpy and torch seeds set before student code


def flags() -> list[tuple[str, str, type, object, str]]:
    """The limits a TA sets on the command line: (field name, ``--flag``, type, default, help)."""
    return [(f.name, "--" + f.name.replace("_", "-"), type(f.default), f.default, f.metadata["help"])
            for f in fields(Limits) if "help" in f.metadata]
