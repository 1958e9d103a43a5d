"""Old home of the PyTorch installer, now :mod:`lmcourse.commands.setup_torch` (deprecated name).

Kept because notebooks already in students' hands run ``python -m lmcourse.setup_torch`` in their
first cell, and older set-up notes run ``python lmcourse/setup_torch.py``. Run either way, it runs
the new file as a script (by its path: the package may not be importable yet); imported, every name
is read from the new module.
"""


if __name__ == "__main__":
    import runpy
    from pathlib import Path

    runpy.run_path(str(Path(__file__).resolve().parent / "commands" / "setup_torch.py"), run_name="__main__")
else:
    from .commands import setup_torch as _moved

    def __getattr__(name: str):
        return getattr(_moved, name)
