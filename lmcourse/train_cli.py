"""Old home of ``lmcourse train``'s command side, now :mod:`lmcourse.commands.train` (deprecated name).

Kept for ``python -m lmcourse.train_cli`` and ``torchrun -m lmcourse.train_cli`` in TAs' notes.
Every name is read from the new module (PEP 562).
"""

import sys

from .commands import train as _moved
from .moved import read_through

__getattr__ = read_through(__name__, "lmcourse.commands.train")


if __name__ == "__main__":  # `python -m lmcourse.train_cli`, as older notes and scripts run it
    sys.exit(_moved.main())
