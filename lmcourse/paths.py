"""Old home of where the course repository is, now :mod:`lmcourse.commands.paths` (deprecated name).

Kept for TAs' and authors' scripts written against the old layout.
Every name is read from the new module (PEP 562).
"""

from .moved import read_through

__getattr__ = read_through(__name__, "lmcourse.commands.paths")
