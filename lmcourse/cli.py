"""Old home of the ``lmcourse`` command, now :mod:`lmcourse.commands.main` (deprecated name).

Kept because the console script installed before the move names ``lmcourse.cli:main`` (an
editable install is not re-run on ``git pull``), and TAs' scripts import it: no warning here.
Every name is read from the new module (PEP 562).
"""

import sys

from .commands import main as _moved


def __getattr__(name: str):
    return getattr(_moved, name)


if __name__ == "__main__":  # `python -m lmcourse.cli`, as older notes and scripts run it
    sys.exit(_moved.main())
