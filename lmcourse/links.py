"""Old home of where the course lives on the web, now :mod:`lmcourse.commands.links` (deprecated name).

Kept for code written against the old layout (TAs' scripts, a student's own notes). The name is
bound to the new module itself, with a DeprecationWarning, so what such code reads or sets is the
real thing.
"""

import sys
import warnings

from .commands import links as _moved

warnings.warn("lmcourse.links moved to lmcourse.commands.links", DeprecationWarning, stacklevel=2)

if __name__ == "__main__":  # `python -m lmcourse.links`, as older notes and scripts run it
    sys.exit(_moved.main())
else:
    sys.modules[__name__] = _moved
