"""`lmcourse doctor`: threads, sandbox, free disk, the kernel in use; a missing corpus, a full disk
or a kernel that cannot import lmcourse are problems (exit 1); a missing sandbox is a problem for
TAs only (marked '!', not "all good", exit 0)."""

import collections
import sys

import pytest

from lmcourse import data
from lmcourse.commands import doctor
from lmcourse.commands import main as cli
from lmcourse.grading import sandbox


@pytest.fixture
def healthy(monkeypatch, tmp_path):
    corpus = tmp_path / "cache" / data.shakespeare_dir().name
    corpus.mkdir(parents=True)
    (corpus / "SOURCE").write_text("test")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    monkeypatch.delenv("LMCOURSE_THREADS", raising=False)
    monkeypatch.setattr(sandbox, "mode", lambda: ("bubblewrap", "/usr/bin/bwrap"))
    monkeypatch.setattr(doctor, "_kernel_python", lambda: (sys.executable, "/kernels/python3"))
    return tmp_path


def _doctor(capsys, *argv):
    code = cli.main(["doctor", *argv])
    return code, capsys.readouterr().out


def test_healthy_machine_is_all_good_and_reports_threads_sandbox_disk_kernel(healthy, capsys):
    code, out = _doctor(capsys)
    assert code == 0 and out.rstrip().endswith("all good"), out
    assert "threads     1 for torch in the notebooks" in out
    assert "sandbox     bubblewrap works" in out
    assert "GB free in" in out
    assert f"kernel      python3 runs {sys.executable}" in out
    assert "(CPU build)" in out and "compile     torch.compile available" in out


def test_missing_corpus_is_a_problem(healthy, capsys, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(healthy / "empty"))
    code, out = _doctor(capsys)
    assert code == 1 and "! corpus: Shakespeare corpus not downloaded yet" in out and "all good" not in out


def test_missing_sandbox_is_a_problem_for_tas_only(healthy, capsys, monkeypatch):
    """`lmcourse grade` refuses to start without bubblewrap: the line is a problem ('!') saying what
    to do (install it, or --sandbox none on a trusted machine) and that students are not affected;
    the verdict is not "all good", while the exit status stays 0 (make lab goes on for students)."""
    monkeypatch.setattr(sandbox, "mode", lambda: ("unavailable", "bwrap not found"))
    code, out = _doctor(capsys)
    line = next(ln for ln in out.splitlines() if "sandbox" in ln and "bwrap not found" in ln)
    assert line.startswith("  ! sandbox: unavailable (bwrap not found)"), line
    assert "apt-get install bubblewrap" in line and "--sandbox none" in line and "students" in line
    assert "all good" not in out and "for TAs" in out.splitlines()[-1], out
    assert code == 0


def test_missing_sandbox_on_the_real_path_is_not_all_good(healthy, capsys, monkeypatch, tmp_path):
    """The same with the real probe: a PATH without bwrap."""
    monkeypatch.undo()                       # the real sandbox.mode, the fixture's corpus again below
    corpus = tmp_path / "cache" / data.shakespeare_dir().name
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    monkeypatch.delenv("LMCOURSE_SANDBOX", raising=False)
    monkeypatch.setattr(doctor, "_kernel_python", lambda: (sys.executable, "/kernels/python3"))
    assert (corpus / "SOURCE").exists()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    sandbox._probe.cache_clear()            # the probe is cached per process
    try:
        _, out = _doctor(capsys)
    finally:
        sandbox._probe.cache_clear()
    assert "  ! sandbox: unavailable" in out and "all good" not in out, out


def test_sandbox_none_chosen_is_information(healthy, capsys, monkeypatch):
    monkeypatch.setattr(sandbox, "mode", lambda: ("none", "--sandbox none / LMCOURSE_SANDBOX=none"))
    code, out = _doctor(capsys)
    assert code == 0 and "- sandbox   none" in out and out.rstrip().endswith("all good"), out


def test_full_disk_and_foreign_kernel_are_problems(healthy, capsys, monkeypatch):
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr("shutil.disk_usage", lambda _: usage(10**10, 10**10 - 3 * 10**8, 3 * 10**8))
    monkeypatch.setattr(doctor, "_kernel_python", lambda: (str(healthy / "no" / "python"), "/kernels/python3"))
    code, out = _doctor(capsys)
    assert code == 1
    assert "! disk: only 0.3 GB free" in out
    assert "! kernel: the notebooks' python3 kernel runs" in out and "cannot import lmcourse" in out
    assert "4 problem(s) found" not in out and "3 problem(s) found" in out  # disk, cache disk, kernel


def test_platform_notes_for_macos_and_windows(healthy, capsys, monkeypatch):
    monkeypatch.setattr(doctor.platform, "system", lambda: "Darwin")
    _, out = _doctor(capsys)
    assert "mps" in out and "float64" in out
    monkeypatch.setattr(doctor.platform, "system", lambda: "Windows")
    _, out = _doctor(capsys)
    assert "torch.compile is not available" in out


def test_the_real_kernel_spec_resolves_to_a_python():
    exe, spec_dir = doctor._kernel_python()
    assert exe and spec_dir
