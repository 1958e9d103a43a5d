"""Old home of where the course repository is, now :mod:`lmcourse.commands.paths` (deprecated name).

Kept for code written against the old layout (TAs' scripts, a student's own notes). The name is
bound to the new module itself, with a DeprecationWarning, so what such code reads or sets is the
real thing.
"""

import sys
import warnings

from .commands import paths as _moved

warnings.warn("lmcourse.paths moved to lmcourse.commands.paths", DeprecationWarning, stacklevel=2)

sys.modules[__name__] = _moved
