"""Old home of the confinement of a graded call, now :mod:`lmcourse.marking.confine` (deprecated name).

Kept for scripts written against the old layout. Every name is read from the new module (PEP 562).
"""

from .moved import read_through

__getattr__ = read_through(__name__, "lmcourse.marking.confine")
