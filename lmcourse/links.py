"""Old home of where the course lives on the web, now :mod:`lmcourse.commands.links` (deprecated name).

Kept for TAs' and authors' scripts written against the old layout.
Every name is read from the new module (PEP 562).
"""

import sys

from .commands import links as _moved
from .moved import read_through

__getattr__ = read_through(__name__, "lmcourse.commands.links")


if __name__ == "__main__":  # `python -m lmcourse.links`, as older notes and scripts run it
    sys.exit(_moved.main())
