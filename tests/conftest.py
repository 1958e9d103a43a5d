import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py"))


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the cores (at most the Makefile's --maxprocesses). A third of a
    run's wall time the cores sat idle, the workers waiting on kernels starting, sandboxes and cell caps;
    the extra worker fills it. PYTEST_XDIST_AUTO_NUM_WORKERS still sets the count."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None                                     # xdist's own hook reads it
    return (os.cpu_count() or 1) + 1


# Which work a test worker takes first. pytest-xdist's loadgroup hands out a group's tests together, by
# default the groups with the most tests first; but a group's cost is its fixtures (a class graded, a
# harness run: minutes), not its count, and a long group taken last keeps one worker busy while the
# others sit idle. So the long kinds go first and the single quick tests fill the gaps at the end.
_LONG_GROUPS = (("grader-batches", "proofs-"), ("second-notebook", "harness-"))


def _work_order(item) -> int:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return len(_LONG_GROUPS) + 1
    name = mark.args[0] if mark.args else mark.kwargs.get("name", "")
    return next((k for k, kinds in enumerate(_LONG_GROUPS) if name.startswith(kinds)), len(_LONG_GROUPS))


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False          # keep the order pytest_collection_modifyitems gives


def pytest_collection_modifyitems(config, items):
    if getattr(config.option, "dist", "no") == "loadgroup":
        items.sort(key=_work_order)                     # stable: a group's tests keep their order


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True, scope="session")
def _no_display():
    os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """One torch thread in each test worker: the workers already take every core, and torch's
    default (a thread per core) in each oversubscribes them, which makes a small model train
    several times slower under load. A test that needs another count sets it and puts it back."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _sandbox_choice_restored():
    """A test that grades in-process with ``--sandbox none`` leaves that choice in the module: the next test
    on the same worker would run its kernels unsandboxed (and one that writes to the package on purpose,
    to show it cannot, would poison the checkout). Every test starts from the default."""
    from lmcourse.grading import sandbox

    before = sandbox._choice
    yield
    sandbox.choose(before)


@pytest.fixture(autouse=True, scope="session")
def _private_course_cache(tmp_path_factory):
    """The tests get a course cache of their own (one per xdist worker): the notebooks they run
    save checkpoints there, never in the user's cache, and two workers never write one file.
    The corpus is fetched once into the real cache (the download is the slow part) and copied."""
    from lmcourse import data

    try:
        corpus = data.ensure_shakespeare(quiet=True)
    except data.CorpusUnavailable:
        corpus = None               # the tests that need it fail with the corpus's own message
    cache = tmp_path_factory.mktemp("course-cache")
    if corpus is not None:
        shutil.copytree(corpus, cache / corpus.name)
    before = os.environ.get(data.DATA_DIR_ENV)
    os.environ[data.DATA_DIR_ENV] = str(cache)
    yield cache
    if before is None:
        os.environ.pop(data.DATA_DIR_ENV, None)
    else:
        os.environ[data.DATA_DIR_ENV] = before


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory):
    """``graded_class(notebook)``: that notebook's class, every catalogue's submissions graded by both
    graders once a session (tests/classes.py); a grading that failed fails each test that asks again,
    without grading again."""
    from tests import classes

    done: dict[str, object] = {}

    def get(name: str):
        if name not in done:
            try:
                done[name] = classes.grade(name, tmp_path_factory)
            except Exception as e:     # noqa: BLE001  (kept and raised again below)
                done[name] = e
        if isinstance(done[name], BaseException):
            raise done[name]
        return done[name]

    return get


# Time per area of the suite (the folders mirror the package), printed after the 20 slowest tests,
# so a slower area shows up as the notebooks are added. Under xdist the reports reach the
# controller, which sums them: worker-seconds, not wall time.
_AREA_SECONDS: dict[str, float] = {}


def _area(nodeid: str) -> str:
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "package"


# When each worker was busy, and how busy the machine's cores were: a run that is slow because one
# worker finished a long group alone at the end, or because the cores sat idle, says so.
_WORKER_SPANS: dict[str, list[tuple[float, float]]] = {}


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) jiffies of every core since boot (Linux), or None."""
    try:
        # user nice system idle iowait irq softirq steal: guest time, the fields after, is counted in user already
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)      # idle + iowait
    return sum(fields) - idle, sum(fields)


def pytest_sessionstart(session):
    session.config._cpu_at_start = _cpu_times()


def pytest_runtest_logreport(report):
    _AREA_SECONDS[_area(report.nodeid)] = _AREA_SECONDS.get(_area(report.nodeid), 0.0) + report.duration
    worker = getattr(getattr(report, "node", None), "gateway", None)
    if worker is not None and getattr(report, "start", None):
        _WORKER_SPANS.setdefault(worker.id, []).append((report.start, report.stop))


def pytest_terminal_summary(terminalreporter):
    if not _AREA_SECONDS:
        return
    total = sum(_AREA_SECONDS.values())
    terminalreporter.write_sep("=", "time per area (worker-seconds, set-up and teardown included)")
    for area, seconds in sorted(_AREA_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"  {area:<10} {seconds:8.1f} s  {100 * seconds / total:5.1f} %")
    terminalreporter.write_line(f"  {'all':<10} {total:8.1f} s")
    if _WORKER_SPANS:
        first = min(a for spans in _WORKER_SPANS.values() for a, _ in spans)
        last = max(b for spans in _WORKER_SPANS.values() for _, b in spans)
        terminalreporter.write_line("  workers: " + ", ".join(
            f"{w} busy {sum(b - a for a, b in spans):.0f} s, done at {max(b for _, b in spans) - first:.0f} s"
            for w, spans in sorted(_WORKER_SPANS.items())) + f" of {last - first:.0f} s")
    before, after = getattr(terminalreporter.config, "_cpu_at_start", None), _cpu_times()
    if before and after and after[1] > before[1]:
        terminalreporter.write_line(f"  cores busy {100 * (after[0] - before[0]) / (after[1] - before[1]):.0f} % "
                                    f"of the run ({os.cpu_count()} cores, anything else running included)")
