"""A notebook's graded kernel, for the tests that it withholds the course code answering that notebook
(``test_withheld_given_*.py``): what the notebook's setup cell imports, then the withholding the setup
cell does while graded, then the check. Each check runs in a process of its own that starts from that
state, as a graded kernel does: withholding is for good, and a module imported before it would stay
reachable.

One interpreter per kernel does the set-up and the withholding once and forks a child for each check
(what the set-up imports, torch included, takes seconds; a fork, milliseconds). A child starts where a
fresh interpreter would be after the setup cell, and what it does dies with it."""

from __future__ import annotations

import atexit
import json
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

# after the set-up: read a check per line, fork, run it in the child as `python -c` would (its stdout,
# stderr and exit status), answer one line. The server's own names stay out of the checks' globals.
SERVE = """
def _serve():
    import json as _json, os as _os, tempfile as _tempfile, time as _time, traceback as _traceback
    answers = _os.fdopen(_os.dup(1), "w")
    _os.dup2(2, 1)              # whatever else prints to stdout goes to stderr, not into an answer
    for line in sys.stdin:
        ask = _json.loads(line)
        out, err = _tempfile.TemporaryFile(), _tempfile.TemporaryFile()
        sys.stdout.flush(), sys.stderr.flush()
        pid = _os.fork()
        if pid == 0:
            devnull = _os.open(_os.devnull, _os.O_RDONLY)
            _os.dup2(devnull, 0), _os.dup2(out.fileno(), 1), _os.dup2(err.fileno(), 2)
            code = 0
            try:
                exec(compile(ask["body"], "<string>", "exec"), globals())
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            except BaseException:
                _traceback.print_exc()
                code = 1
            sys.stdout.flush(), sys.stderr.flush()
            _os._exit(code)
        deadline, status = _time.monotonic() + ask["timeout"], None
        while status is None:
            done, st = _os.waitpid(pid, _os.WNOHANG)
            if done:
                status = _os.waitstatus_to_exitcode(st)
            elif _time.monotonic() > deadline:
                _os.kill(pid, 9)
                _os.waitpid(pid, 0)
                status = "timeout"
            else:
                _time.sleep(0.005)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
            f.close()
        answers.write(_json.dumps({"returncode": status, "stdout": texts[0], "stderr": texts[1]}) + "\\n")
        answers.flush()
_serve()
"""

_SERVERS: dict[tuple[str, str], subprocess.Popen] = {}


@dataclass(frozen=True)
class WithheldKernel:
    notebook: str   # e.g. "05_gpt"
    setup: str      # what its setup cell and its graded cells import, before the withholding

    def _server(self) -> subprocess.Popen:
        key = (self.notebook, self.setup)
        proc = _SERVERS.get(key)
        if proc is None or proc.poll() is not None:
            env = dict(os.environ, OMP_NUM_THREADS="1", NBGRADER_EXECUTION="autograde", LMCOURSE_PROFILE="tiny")
            script = self.setup + WITHHOLD.format(notebook=self.notebook) + SERVE
            proc = _SERVERS[key] = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                    env=env)
        return proc

    def run(self, body: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """``body`` (indented as you like) run in a graded kernel of the notebook, just set up."""
        proc = self._server()
        proc.stdin.write(json.dumps({"body": textwrap.dedent(body), "timeout": timeout}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:        # the set-up itself failed: say how
            proc.wait(timeout=60)
            raise RuntimeError(f"{self.notebook}'s kernel did not start:\n{proc.stderr.read()[-3000:]}")
        got = json.loads(line)
        assert got["returncode"] != "timeout", f"the check ran past {timeout} s"
        return subprocess.CompletedProcess(["<a graded kernel>"], got["returncode"], got["stdout"], got["stderr"])

    def assert_refuses(self, how: str) -> None:
        """The one-line import ``how`` fails with the withholding's ImportError, which names the notebook."""
        done = self.run(TRY_IMPORT.format(how=how))
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("refused:"), done.stdout
        assert "not available while notebook" in done.stdout and self.notebook in done.stdout, done.stdout


@atexit.register
def _stop_servers() -> None:
    for proc in _SERVERS.values():
        if proc.poll() is None:
            proc.stdin.close()      # the server's loop ends on end of input
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
