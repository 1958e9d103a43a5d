"""Old home of the ``lmcourse`` command, now :mod:`lmcourse.commands.main`.

Kept because the console script installed before the move names ``lmcourse.cli:main`` (an
editable install is not re-run on ``git pull``) and TAs' scripts import it. The name is bound to
the new module itself, so what such a script reads or sets is the real thing.
"""

import sys

from .commands import main as _moved

if __name__ == "__main__":  # `python -m lmcourse.cli`, as older notes and scripts run it
    sys.exit(_moved.main())
else:
    sys.modules[__name__] = _moved
