"""A notebook's graded kernel, for the tests that it withholds the course code answering that notebook
(``test_withheld_given_*.py``): what the notebook's setup cell imports, then the withholding the setup
cell does while graded, then the check. Each check runs in a fresh interpreter, as the graded kernel is
one: withholding is for good, and a module imported before it would stay reachable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

WITHHOLD = """
import sys
from lmcourse.marking.kernel import withhold
from lmcourse.marking.notebooks import load
withhold(load({notebook!r}))
"""

TRY_IMPORT = """
try:
    {how}
except ImportError as err:
    print("refused:", err)
else:
    print("imported")
"""


@dataclass(frozen=True)
class WithheldKernel:
    notebook: str   # e.g. "05_gpt"
    setup: str      # what its setup cell and its graded cells import, before the withholding

    def run(self, body: str) -> subprocess.CompletedProcess:
        """``body`` (indented as you like) run in a fresh graded kernel of the notebook."""
        env = dict(os.environ, OMP_NUM_THREADS="1", NBGRADER_EXECUTION="autograde", LMCOURSE_PROFILE="tiny")
        script = self.setup + WITHHOLD.format(notebook=self.notebook) + textwrap.dedent(body)
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)

    def assert_refuses(self, how: str) -> None:
        """The one-line import ``how`` fails with the withholding's ImportError, which names the notebook."""
        done = self.run(TRY_IMPORT.format(how=how))
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("refused:"), done.stdout
        assert "not available while notebook" in done.stdout and self.notebook in done.stdout, done.stdout
