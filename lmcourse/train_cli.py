"""Old home of ``lmcourse train``'s command side, now :mod:`lmcourse.commands.train` (deprecated name).

Kept for code written against the old layout (TAs' scripts, a student's own notes). The name is
bound to the new module itself, with a DeprecationWarning, so what such code reads or sets is the
real thing.
"""

import sys
import warnings

from .commands import train as _moved

warnings.warn("lmcourse.train_cli moved to lmcourse.commands.train", DeprecationWarning, stacklevel=2)

if __name__ == "__main__":  # `python -m lmcourse.train_cli`, as older notes and scripts run it
    sys.exit(_moved.main())
else:
    sys.modules[__name__] = _moved
