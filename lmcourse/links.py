"""Old home of where the course lives on the web, now :mod:`lmcourse.commands.links` (deprecated name).

Kept for TAs' and authors' scripts written against the old layout.
Every name is read from the new module (PEP 562).
"""

import sys
import warnings

from .commands import links as _moved


def __getattr__(name: str):
    warnings.warn(f"lmcourse.links.{name} moved to lmcourse.commands.links.{name}", DeprecationWarning,
                  stacklevel=2)
    return getattr(_moved, name)


if __name__ == "__main__":  # `python -m lmcourse.links`, as older notes and scripts run it
    sys.exit(_moved.main())
