import random

import numpy as np
import pytest
import torch

from lmcourse import runtime


def test_profile_is_tiny_under_nbgrader(monkeypatch):
    monkeypatch.delenv("LMCOURSE_PROFILE", raising=False)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert runtime.profile_name() == "tiny"
    assert runtime.is_autograding()


def test_env_override_wins_and_bad_value_is_explained(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.setenv("LMCOURSE_PROFILE", "cpu")
    assert runtime.get_profile().name == "cpu"
    monkeypatch.setenv("LMCOURSE_PROFILE", "huge")
    with pytest.raises(ValueError, match="tiny, cpu, gpu"):
        runtime.profile_name()


def test_profile_follows_device_when_not_grading(monkeypatch):
    monkeypatch.delenv("LMCOURSE_PROFILE", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert runtime.profile_name(torch.device("cuda")) == "gpu"
    assert runtime.profile_name(torch.device("cpu")) == "cpu"


def test_profiles_grow_from_tiny_to_gpu():
    tiny, cpu, gpu = (runtime.get_profile(n) for n in runtime.PROFILES)
    assert tiny.train_steps < cpu.train_steps < gpu.train_steps
    assert tiny.n_embd < cpu.n_embd < gpu.n_embd
    assert runtime.get_profile("cpu", train_steps=7).train_steps == 7


def test_device_falls_back_to_cpu_and_explains_missing_cuda(monkeypatch):
    monkeypatch.delenv("LMCOURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert runtime.pick_device().type == "cpu"
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        runtime.pick_device("cuda")


def test_device_prefers_cuda(monkeypatch):
    monkeypatch.delenv("LMCOURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert runtime.pick_device().type == "cuda"


def test_seeding_repeats_python_numpy_torch():
    def draw():
        runtime.seed_everything(3)
        return random.random(), float(np.random.rand()), float(torch.rand(()))

    assert draw() == draw()


def test_setup_prints_device_profile_seed(capsys, monkeypatch):
    monkeypatch.setenv("LMCOURSE_PROFILE", "tiny")
    rt = runtime.setup(seed=5)
    out = capsys.readouterr().out
    assert "profile=tiny" in out and "seed=5" in out and "device=" in out
    assert rt.profile.name == "tiny"


def test_threads_one_on_cpu_and_under_autograding_env_overrides(monkeypatch):
    monkeypatch.delenv("LMCOURSE_THREADS", raising=False)
    monkeypatch.delenv("LMCOURSE_DEVICE", raising=False)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert runtime.cpu_threads(torch.device("cuda")) == 1
    monkeypatch.delenv("NBGRADER_EXECUTION")
    assert runtime.cpu_threads(torch.device("cpu")) == 1  # the default on CPU, not a tip
    assert runtime.cpu_threads(torch.device("cuda")) is None  # torch's default feeds a GPU
    assert runtime.cpu_threads(torch.device("mps")) is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert runtime.cpu_threads() == 1  # no device given: the one pick_device() chooses
    monkeypatch.setenv("LMCOURSE_THREADS", "3")
    assert runtime.cpu_threads(torch.device("cpu")) == 3
    assert runtime.cpu_threads(torch.device("cuda")) == 3
    monkeypatch.setenv("LMCOURSE_THREADS", "many")
    with pytest.raises(ValueError, match="positive whole number"):
        runtime.cpu_threads()


def test_setup_uses_one_thread_on_cpu_by_default(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("LMCOURSE_THREADS", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    monkeypatch.setenv("LMCOURSE_PROFILE", "tiny")
    try:
        torch.set_num_threads(2)
        rt = runtime.setup(quiet=True)
        assert rt.device.type == "cpu" and rt.threads == 1 == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_setup_applies_thread_count(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("LMCOURSE_THREADS", "1")
    monkeypatch.setenv("LMCOURSE_PROFILE", "tiny")
    try:
        assert runtime.setup(quiet=True).threads == 1 == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("grading, env_profile, want", [("autograde", "", "tiny"), ("", "", "cpu"), ("", "gpu", "gpu")])
def test_a_counting_notebook_loads_no_torch(grading, env_profile, want):
    """01's ``setup(neural=False)``: no torch import (seconds on every start and every graded
    submission), the profile still the one in force; checked in a fresh interpreter, where torch
    is not loaded yet."""
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if k not in ("NBGRADER_EXECUTION", "LMCOURSE_PROFILE")}
    env.update({k: v for k, v in (("NBGRADER_EXECUTION", grading), ("LMCOURSE_PROFILE", env_profile)) if v})
    program = ("import sys, random, numpy as np, lmcourse\n"
               "rt = lmcourse.setup(seed=3, neural=False)\n"
               "print(rt.profile.name, rt.device, rt.threads, 'torch' in sys.modules, random.random() == "
               "(random.seed(3) or random.random()), np.random.rand() == (np.random.seed(3) or np.random.rand()))\n")
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    banner, values = done.stdout.strip().splitlines()
    assert banner == f"lmcourse: profile={want} seed=3 (counting only: torch not loaded)"
    assert values == f"{want} None None False True True"


def test_given_returns_the_module_or_says_why_it_is_absent(capsys):
    import subprocess
    import sys

    from lmcourse.runtime import given

    assert given("lmcourse.tokenizers").__name__ == "lmcourse.tokenizers"
    assert given("lmcourse.no_such_module", "the demo") is None
    assert "lmcourse.no_such_module is not available in this copy of the course; the demo" in capsys.readouterr().out
    # a withheld module, in a fresh interpreter (withholding lasts for the process)
    code = ("from lmcourse.marking.kernel import withhold; from lmcourse.marking.notebooks import load; "
            "withhold(load('01_ngram')); from lmcourse.runtime import given; print(given('lmcourse.reference.ngram'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "lmcourse.reference.ngram is not available" in out and out.strip().endswith("None")


def test_given_shows_an_import_error_that_is_not_an_absent_module(tmp_path, monkeypatch):
    import sys

    import pytest

    import lmcourse
    from lmcourse.runtime import given

    # a course module of the test's own, beside the package's: importing it raises a real bug
    (tmp_path / "broken_given_mod.py").write_text("import numpy\nraise ImportError('a real bug')\n")
    monkeypatch.setattr(lmcourse, "__path__", [*lmcourse.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "lmcourse.broken_given_mod", raising=False)
    with pytest.raises(ImportError, match="a real bug"):
        given("lmcourse.broken_given_mod")


def test_given_hands_out_course_modules_only():
    """given() imports a course module by its name; any other name (a red team asked it for builtins, to
    reach exec) is refused."""
    with pytest.raises(ValueError, match="course module"):
        runtime.given("builtins")
    assert runtime.given("lmcourse.data") is not None
