"""The set-up's torch choice (lmcourse/commands/setup_torch.py), tested without the network."""

import subprocess
import sys
import urllib.error

import pytest

from lmcourse.commands import setup_torch as st
from tests.conftest import ROOT


def test_linux_without_gpu_gets_the_cpu_wheel_index():
    plan = st.decide("auto", "Linux", "x86_64", nvidia=False, cpu_index_ok=True)
    assert plan.variant == "cpu" and "no NVIDIA GPU" in plan.reason
    assert plan.pip_args == ["install", "--extra-index-url", st.CPU_INDEX, "torch==2.13.0+cpu"]


def test_linux_with_gpu_keeps_the_default_cuda_wheel():
    plan = st.decide("auto", "Linux", "x86_64", nvidia=True, cpu_index_ok=True)
    assert plan.variant == "cuda" and plan.pip_args == ["install", "torch==2.13.0"]


@pytest.mark.parametrize("variant,nvidia,want", [("cpu", True, "cpu"), ("cuda", False, "cuda")])
def test_override_wins_over_detection(variant, nvidia, want):
    plan = st.decide(variant, "Linux", "x86_64", nvidia=nvidia, cpu_index_ok=True)
    assert plan.variant == want and "asked for" in plan.reason
    assert (st.CPU_INDEX in plan.pip_args) == (want == "cpu")


def test_unreachable_cpu_index_falls_back_to_pips_own_settings():
    plan = st.decide("auto", "Linux", "x86_64", nvidia=False, cpu_index_ok=False)
    assert plan.pip_args == ["install", "torch==2.13.0+cpu"]  # find-links / a mirror still work
    assert "cannot be reached" in plan.reason and "CUDA build" in plan.notes[0]


@pytest.mark.parametrize("system", ["Darwin", "Windows"])
def test_macos_and_windows_use_the_default_wheel(system):
    plan = st.decide("auto", system, "arm64", nvidia=False, cpu_index_ok=True)
    assert plan.variant == "platform" and plan.pip_args == ["install", "torch==2.13.0"]


def test_aarch64_keeps_the_plain_version_and_the_users_extra_indexes_are_kept():
    plan = st.decide("cpu", "Linux", "aarch64", nvidia=False, cpu_index_ok=True,
                     extra_indexes=["file:///srv/simple"])
    assert plan.pip_args == ["install", "--extra-index-url", st.CPU_INDEX,
                             "--extra-index-url", "file:///srv/simple", "torch==2.13.0"]


def test_bad_variant_is_explained():
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        st.decide("rocm", "Linux", "x86_64", nvidia=False, cpu_index_ok=True)


def test_pip_config_extra_indexes_are_read():
    lines = ["global.cert='/etc/ssl/cert.pem'", "global.extra-index-url='file:///a/simple file:///b/simple'",
             ":env:.extra-index-url='file:///a/simple'"]
    assert st.configured_extra_indexes(lines) == ["file:///a/simple", "file:///b/simple"]


def test_gpu_detection_without_a_driver_or_with_one():
    def no_file(_):
        return False

    assert not st.has_nvidia_gpu(exists=no_file, which=lambda _: None)
    assert st.has_nvidia_gpu(exists=lambda p: p == "/proc/driver/nvidia/version", which=lambda _: None)

    class Done:
        returncode, stdout = 0, "GPU 0: NVIDIA H100 (UUID: GPU-1)\n"

    assert st.has_nvidia_gpu(run=lambda *a, **k: Done(), exists=no_file, which=lambda _: "/usr/bin/nvidia-smi")
    Done.returncode = 9  # nvidia-smi present but no driver loaded
    assert not st.has_nvidia_gpu(run=lambda *a, **k: Done(), exists=no_file, which=lambda _: "/usr/bin/nvidia-smi")


def test_index_probe_reports_failure_instead_of_raising():
    def offline(*a, **k):
        raise urllib.error.URLError("no route")

    assert st.index_reachable(opener=offline) is False

    class Answer:
        status = 200

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    seen = {}

    def online(request, timeout):
        seen["url"], seen["timeout"] = request.full_url, timeout
        return Answer()

    assert st.index_reachable(opener=online, timeout=2) is True
    assert seen == {"url": st.CPU_INDEX + "/torch/", "timeout": 2}


def test_script_runs_standalone_before_lmcourse_is_installed():
    """The Makefile runs the file with the venv's bare Python: stdlib only, --dry-run installs nothing."""
    done = subprocess.run([sys.executable, "-S", str(ROOT / "lmcourse" / "commands" / "setup_torch.py"), "--dry-run",
                           "--variant", "cuda", "--python", sys.executable],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "-m pip install torch==2.13.0" in done.stdout
