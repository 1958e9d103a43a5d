"""Old home of where the course repository is, now :mod:`lmcourse.commands.paths` (deprecated name).

Kept for TAs' and authors' scripts written against the old layout.
Every name is read from the new module (PEP 562).
"""

import warnings

from .commands import paths as _moved


def __getattr__(name: str):
    warnings.warn(f"lmcourse.paths.{name} moved to lmcourse.commands.paths.{name}", DeprecationWarning,
                  stacklevel=2)
    return getattr(_moved, name)
