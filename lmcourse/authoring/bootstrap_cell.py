# @title Set-up for Colab, Kaggle or a JupyterHub (run it first; after `make lab` it does nothing)
# Where this kernel lacks the course package, this installs it (pinned to REF, without touching the
# runtime's own torch) and fetches the corpus, then says so in one line.
REPOSITORY, REF = "https://github.com/OWNER/NAME", "TAG"
try:
    import lmcourse  # noqa: F401  (set up already: nothing to do)
except ImportError:
    import importlib
    import importlib.metadata
    import importlib.util
    import os
    import site
    import subprocess
    import sys
    from pathlib import Path

    def _pip(*args):
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(
                f"lmcourse set-up: `pip install {' '.join(args)}` failed:\n{(done.stderr or done.stdout)[-1500:]}\n"
                "Does this runtime reach the internet? (Kaggle: Settings > Internet on; a JupyterHub: ask its "
                "admins.) Then run this cell again.")

    # a clone beside the notebook (nbgitpuller on a JupyterHub) installs itself; else the pinned release
    _clone = next((p for p in (Path.cwd(), *Path.cwd().parents)
                   if (p / "lmcourse" / "__init__.py").is_file() and (p / "pyproject.toml").is_file()), None)
    _source = str(_clone) if _clone else f"git+{os.environ.get('LMCOURSE_REPOSITORY', REPOSITORY)}@{REF}"
    _pip("--no-deps", _source)  # --no-deps: Colab's and Kaggle's CUDA torch stays as it is
    _needs = {"numpy": "numpy>=1.24", "matplotlib": "matplotlib>=3.7", "tqdm": "tqdm>=4.66", "regex": "regex>=2023.10"}
    _missing = [req for mod, req in _needs.items() if importlib.util.find_spec(mod) is None]
    if _missing:
        _pip(*_missing)
    _torch = "kept this runtime's torch"
    if importlib.util.find_spec("torch") is None:  # a bare hub: the CPU build unless it has an NVIDIA GPU
        subprocess.run([sys.executable, "-m", "lmcourse.commands.setup_torch", "--quiet"], check=True)
        _torch = "installed torch"
    if site.ENABLE_USER_SITE and site.getusersitepackages() not in sys.path:
        site.addsitedir(site.getusersitepackages())  # pip's --user fallback where site-packages is read-only
    importlib.invalidate_caches()
    import lmcourse
    from lmcourse import data

    _corpus = data.ensure_shakespeare(quiet=True)
    print(f"lmcourse set-up: installed lmcourse {lmcourse.__version__} from {_source}, {_torch} "
          f"{importlib.metadata.version('torch')}{', added ' + ', '.join(_missing) if _missing else ''}; "
          f"corpus in {_corpus}")
