"""End to end in a real browser: the student's lab as `make lab` starts it, driven by Chromium.

JupyterLab (our `lmcourse lab` command line and configuration) on a fresh work folder; open
01_ngram.ipynb, run the set-up cell, write Exercise 1 in the cell editor (first with a typical
mistake, then right), run its test cell and read the message, click nbgrader's Validate and read
its verdict. The student's lab must show no instructor panel and no news pop-up, and start the
notebook's kernel without asking (JupyterLab's autoStartDefaultKernel, set by our lab).

A slow server (a busy 2-core machine) must not fail it: every wait is generous, the test waits for
the kernel to be idle before the first click, and a "Select Kernel" dialog that still appears (the
page asked before the server had listed its kernels) is accepted as a student would, with a warning.

Needs Playwright for Python and a Chromium (Debian: `apt-get install chromium`; `.ci/run` installs
it; `LMCOURSE_CHROMIUM=/path` picks another). Skips, saying why, where either is missing.
Screenshots of a failure are kept in build/browser/.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import warnings

import pytest

from lmcourse.commands import main as cli
from tests.conftest import ROOT

pytestmark = [pytest.mark.xdist_group("browser"), pytest.mark.slow]

TOKEN = "lmcourse-browser-test"
WRONG = 'def pad_sentence(words, n):\n    return ["<s>"] * n + list(words) + ["</s>"]\n'
RIGHT = 'def pad_sentence(words, n):\n    return ["<s>"] * (n - 1) + list(words) + ["</s>"]\n'


def _chromium() -> str | None:
    for name in (os.environ.get("LMCOURSE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def browser():
    """(playwright's sync API, the Chromium to drive), or a skip that says what is missing."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed "
                                   "(pip install playwright; make test installs the dev extra)")
    path = _chromium()
    if path is None:
        pytest.skip("no Chromium found (Debian/Ubuntu: apt-get install chromium; or LMCOURSE_CHROMIUM=/path)")
    return sync_api, path


@pytest.fixture
def lab(browser, tmp_path):
    """Our student lab on a fresh work folder, on a free port; its log on failure."""
    work = tmp_path / "work"
    cli.copy_student_notebooks(ROOT / "notebooks", work)
    port = _free_port()
    cmd, env = cli.lab_command(work, ta=False, root=ROOT, extra=[
        "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}"])
    env.update(LMCOURSE_PROFILE="tiny", JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"))  # the user's own lab settings stay out
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
                            start_new_session=True)  # the lab and its kernels end together
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a busy machine starts JupyterLab slowly
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"JupyterLab did not start:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.5)
    yield url, work, tmp_path / "lab.log"
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()


def _cell(page, index):
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell").nth(index)


def _kernel_idle(page, timeout_s=180):
    """Wait until the notebook's kernel is idle. A "Select Kernel" dialog is accepted with its
    preselected kernel (a student's click), and reported as a warning: the lab should not ask."""
    dialog = page.locator(".jp-Dialog").filter(has_text="Select Kernel")
    idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle'], #jp-main-statusbar :text('Idle')")
    deadline = time.monotonic() + timeout_s
    while True:
        if dialog.count() and dialog.first.is_visible():
            warnings.warn("the lab asked 'Select Kernel' on opening 01_ngram.ipynb; accepted the preselected "
                          "kernel (autoStartDefaultKernel should have started it)", stacklevel=2)
            dialog.first.locator(".jp-mod-accept").click()
        elif idle.count():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the kernel was not idle {timeout_s} s after the notebook opened")
        page.wait_for_timeout(500)


def _run(page, index, timeout_ms=120_000):
    """Click into cell ``index``, Shift+Enter, wait until its prompt shows a number. A run asked
    for while the new kernel is still connecting can be dropped (the prompt stays empty): asked
    again then, at most twice."""
    import re

    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    cell = _cell(page, index)
    prompt = cell.locator(".jp-InputPrompt")
    for attempt in range(3):
        cell.locator(".cm-content").click()
        page.keyboard.press("Escape")        # command mode: Shift+Enter runs the cell
        page.keyboard.press("Shift+Enter")
        try:
            expect(prompt).to_have_text(re.compile(r"\[(\*|\d+)\]"), timeout=20_000)
            break
        except (AssertionError, PlaywrightTimeout):
            if attempt == 2:
                raise
    expect(prompt).to_have_text(re.compile(r"\[\d+\]"), timeout=timeout_ms)
    return cell


def _type_into(page, index, source):
    """Replace cell ``index``'s source through its editor, as a student would."""
    editor = _cell(page, index).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(source)        # as typed, without the editor's auto-closing brackets


def test_student_lab_in_chromium(browser, lab):
    sync_api, browser_path = browser
    url, work, log = lab
    shots = ROOT / "build" / "browser"
    with sync_api.sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=browser_path, headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage"])
        page = chrome.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(90_000)     # generous: a busy 2-core machine serves slowly
        try:
            # the student lab's setting that starts the notebook's kernel without a dialog
            with urllib.request.urlopen(f"{url}/lab/api/settings/@jupyterlab/notebook-extension:tracker"
                                        f"?token={TOKEN}", timeout=30) as r:
                tracker = json.load(r)
            assert tracker["schema"]["properties"]["autoStartDefaultKernel"]["default"] is True, tracker["schema"]
            page.goto(f"{url}/lab/tree/01_ngram.ipynb?token={TOKEN}", timeout=120_000)
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=120_000)
            _kernel_idle(page)
            # the student's lab: Validate, but no instructor panel, no Nbgrader menu, no news toast
            validate = page.locator(".jp-NotebookPanel-toolbar").get_by_text("Validate", exact=True)
            assert validate.count() == 1
            assert page.locator("#jp-menu-panel :text('Nbgrader'), .lm-MenuBar :text('Nbgrader')").count() == 0
            # cell 1 installs the course on Colab / Kaggle (lmcourse/authoring/bootstrap_cell.py): silent here
            _run(page, 1)
            assert _cell(page, 1).locator(".jp-OutputArea").inner_text().strip() == ""
            _run(page, 2)                    # the set-up cell
            assert "profile=tiny" in _cell(page, 2).locator(".jp-OutputArea").inner_text()
            # Exercise 1's test before its answer cell ran: the NameError says which cell to run
            out = _run(page, 5).locator(".jp-OutputArea").inner_text()
            assert "name 'pad_sentence' is not defined. `pad_sentence` is defined in Exercise 1" in out, out
            _type_into(page, 4, WRONG)       # Exercise 1 with a typical mistake ...
            _run(page, 4)
            out = _run(page, 5).locator(".jp-OutputArea").inner_text()
            # the check's message comes first, then the test cell's line; no frame of lmcourse's
            assert out.strip().startswith(
                "CheckFailed: pad_sentence(['cows', 'eat', 'grass'], 3): got ['<s>', '<s>', '<s>', 'cows'"), out
            assert "n-1 = 2 start tokens" in out and "Cell In[" in out and "checks.py" not in out, out
            _type_into(page, 4, RIGHT)       # ... then right
            _run(page, 4)
            out = _run(page, 5).locator(".jp-OutputArea").inner_text()
            assert "Error" not in out, out
            validate.click()                 # nbgrader saves the notebook, then validates it
            dialog = page.locator(".jp-Dialog")
            dialog.wait_for(timeout=180_000)
            text = dialog.inner_text()
            assert "Validation Results" in text, text
            # the rest of the notebook is not done yet: nbgrader says so, and not about Exercise 1
            assert "failed" in text.lower() and "NotImplementedError" in text, text
            assert "pad_sentence(['cows', 'eat', 'grass'], 3)" not in text, text
            # our config's line: how many tests stop with an error, and which (lmcourse/labconfig/validate.py)
            assert "tests stop with an error: count_ngrams_tests (Exercise 2)" in text, text
            assert "Question q1 is not answered yet" in text, text
            saved = (work / "01_ngram.ipynb").read_text()
            assert "(n - 1) + list(words)" in saved          # saved into the work folder ...
            assert "(n - 1) + list(words)" not in (ROOT / "notebooks" / "01_ngram.ipynb").read_text()  # only
            assert "No nbgrader_config.py" not in log.read_text()
            assert page.locator(".Toastify__toast").filter(has_text="news").count() == 0  # asked after load
        except Exception:
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / "test_student_lab_in_chromium.png"), full_page=True)
            shutil.copy(log, shots / "lab.log")
            raise
        finally:
            chrome.close()
