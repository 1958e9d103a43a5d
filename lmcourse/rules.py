"""Old home of the rules of a graded call, now :mod:`lmcourse.marking.rules` (deprecated name).

Kept for the test cells of notebooks built before the move. Every name is read from the new module (PEP 562).
"""

from .moved import read_through

__getattr__ = read_through(__name__, "lmcourse.marking.rules")
