"""Old home of ``lmcourse train``'s command side, now :mod:`lmcourse.commands.train` (deprecated name).

Kept for ``python -m lmcourse.train_cli`` and ``torchrun -m lmcourse.train_cli`` in TAs' notes.
Every name is read from the new module (PEP 562).
"""

import sys
import warnings

from .commands import train as _moved


def __getattr__(name: str):
    warnings.warn(f"lmcourse.train_cli.{name} moved to lmcourse.commands.train.{name}", DeprecationWarning,
                  stacklevel=2)
    return getattr(_moved, name)


if __name__ == "__main__":  # `python -m lmcourse.train_cli`, as older notes and scripts run it
    sys.exit(_moved.main())
