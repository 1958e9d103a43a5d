"""`lmcourse solutions` goes on after a failing notebook (error, cell timeout), prints a progress
line per notebook and a summary table, exits non-zero when any failed, and gives the kernels the
notebooks' own CPU-thread default."""

import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from lmcourse import runtime
from lmcourse.commands import main as cli
from lmcourse.notebook_runner import profile_name


def _notebook(path, *sources):
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_failures_are_reported_and_the_run_goes_on(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(runtime.THREADS_ENV, raising=False)
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    src = tmp_path / "src"
    src.mkdir()
    (src / "00_bad.ipynb").write_text("not json")
    nbs = [
        src / "00_bad.ipynb",
        _notebook(src / "01_raises.ipynb", "raise ValueError('broken on purpose')"),
        _notebook(src / "02_slow.ipynb", "import time\ntime.sleep(30)"),
        _notebook(src / "03_ok.ipynb", "print('ran')\nimport time\ntime.sleep(1.2)"),   # slow enough for a line
    ]
    out = tmp_path / "out"
    code = cli.main(["solutions", *map(str, nbs), "--out", str(out), "--timeout", "3"])
    text = capsys.readouterr().out
    assert code == 1, text
    for i, name in enumerate(["00_bad", "01_raises", "02_slow", "03_ok"], 1):
        assert f"[{i}/4] {name}.ipynb ..." in text  # a progress line before each notebook
    table = text[text.index("notebook  "):]
    assert re.search(r"01_raises\.ipynb\s+error\s+[\d.]+ s\s+ValueError: broken on purpose", table), table
    assert re.search(r"02_slow\.ipynb\s+timeout\s+[\d.]+ s\s+a cell ran longer than 3 s", table), table
    assert re.search(r"03_ok\.ipynb\s+ok\s+[\d.]+ s", table), table
    assert re.search(r"00_bad\.ipynb\s+crashed\s+[\d.]+ s\s+NotJSONError", table), table
    assert "1 ok, 3 failed" in table
    assert "    cell 1/1: print('ran')" in text              # a line as each cell starts ...
    assert "    cell 1/1: time.sleep(30)" not in text and "    cell 1/1: import time" in text
    assert re.search(r"    cell 1/1: print\('ran'\)\n    cell 1/1 done in [\d.]+ s", text)  # ... and as a slow one ends
    kept = out / profile_name(None)                           # one folder per profile
    ran = nbformat.read(kept / "03_ok.ipynb", as_version=4)  # the notebook after the timeout ran
    assert ran.cells[0].outputs[0]["text"] == "ran\n"
    assert (kept / "01_raises.ipynb").exists()  # partial output kept for reading


def test_kernels_get_the_notebooks_thread_default(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(runtime.THREADS_ENV, raising=False)
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    nb = _notebook(tmp_path / "01_threads.ipynb",
                   "import os, lmcourse, torch\nrt = lmcourse.setup(quiet=True)\n"
                   "print('threads', torch.get_num_threads(), os.environ.get('LMCOURSE_THREADS'))")
    assert cli.main(["solutions", str(nb), "--out", str(tmp_path / "out"), "--profile", "tiny"]) == 0
    assert "cpu threads 1," in capsys.readouterr().out
    ran = nbformat.read(tmp_path / "out" / "tiny" / "01_threads.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for o in ran.cells[0].outputs)
    assert printed.split() == ["threads", "1", "1"], printed  # as lmcourse.setup() in the lab


def test_all_ok_exits_zero_and_threads_option(tmp_path, capsys):
    nb = _notebook(tmp_path / "01_ok.ipynb", "import os\nprint(os.environ['LMCOURSE_THREADS'])")
    code = cli.main(["solutions", str(nb), "--out", str(tmp_path / "out"), "--threads", "2"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "1 ok, 0 failed" in text and "cpu threads 2" in text
    ran = nbformat.read(tmp_path / "out" / profile_name(None) / "01_ok.ipynb", as_version=4)
    assert ran.cells[0].outputs[0]["text"].strip() == "2"


@pytest.mark.parametrize("argv", [["solutions", "--timeout", "x"]])
def test_timeout_must_be_a_number(argv):
    with pytest.raises(SystemExit):
        cli.main(argv)


def test_banner_html_pages_and_no_tcp_warning(tmp_path, capfd, monkeypatch):
    """The banner names the profile the kernels get and where it comes from (it said `default`
    while the notebooks ran tiny); each executed notebook gets an HTML page with its figures
    inline; the kernel talks over IPC, so ipykernel's "running over TCP without encryption"
    warning is not printed and no socket file lands in the current folder."""
    monkeypatch.setenv("LMCOURSE_PROFILE", "tiny")
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    monkeypatch.chdir(tmp_path)
    nb = _notebook(tmp_path / "01_plot.ipynb",
                   "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3]);",
                   "import os\nprint(os.environ['LMCOURSE_PROFILE'])")
    assert cli.main(["solutions", str(nb), "--out", str(tmp_path / "out")]) == 0
    out, err = capfd.readouterr()
    assert "profile tiny (LMCOURSE_PROFILE)" in out, out
    assert "without encryption" not in out + err, err
    page = (tmp_path / "out" / "tiny" / "01_plot.html").read_text()
    assert "data:image/png;base64," in page and "tiny" in page
    assert ".html pages in" in out and "lmcourse lab --solutions" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01_plot.ipynb", "out"]
    assert cli.main(["solutions", str(nb), "--out", str(tmp_path / "out"), "--profile", "cpu"]) == 0
    assert "profile cpu (--profile)" in capfd.readouterr().out
    # the cpu run has its own folder: the tiny run's pages are still there
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["cpu", "tiny"]
    tiny = nbformat.read(tmp_path / "out" / "tiny" / "01_plot.ipynb", as_version=4)
    cpu = nbformat.read(tmp_path / "out" / "cpu" / "01_plot.ipynb", as_version=4)
    assert [o["text"].strip() for o in tiny.cells[1].outputs] == ["tiny"]
    assert [o["text"].strip() for o in cpu.cells[1].outputs] == ["cpu"]
