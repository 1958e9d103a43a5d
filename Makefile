# Thin wrappers; see README.md. Everything runs inside .venv, created on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# torch is installed before the project: the CPU build (PyTorch's CPU wheel index,
# https://download.pytorch.org/whl/cpu) where there is no NVIDIA GPU, so pip never pulls a
# multi-GB CUDA build onto a laptop; the CUDA build where there is one; a local wheel or mirror
# where that index cannot be reached. A torch already in .venv is kept.
# Override: make setup TORCH_VARIANT=cpu|cuda (or LMCOURSE_TORCH=...); see lmcourse/commands/setup_torch.py.
TORCH  ?= torch==2.13.0
TORCH_VARIANT ?= $(or $(LMCOURSE_TORCH),auto)
# tests on a worker per core and one more (tests/conftest.py), at most 4; groups that share an expensive
# fixture stay on one worker
PYTEST ?= $(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadgroup --durations=20

.PHONY: help setup lab lab-solutions test test-quick build solutions grade doctor gpu-check bench clean

help:                     ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):[^#]*## /  make \1\t/' | expand -t 22

$(BIN)/lmcourse: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python lmcourse/commands/setup_torch.py --quiet --variant "$(TORCH_VARIANT)" --spec "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BIN)/lmcourse

setup: $(BIN)/lmcourse     ## create .venv: torch (CPU build without an NVIDIA GPU), then the project

lab: setup                ## set up, fetch the corpus, open JupyterLab on your own copies in work/ (TA=1: instructor view)
	$(BIN)/lmcourse doctor --fetch || echo "(the lab starts anyway; see the lines marked '!')"
	$(BIN)/lmcourse lab $(if $(TA),--ta) $(if $(LAB_ARGS),-- $(LAB_ARGS))  # LAB_ARGS="--ip 0.0.0.0 --no-browser"

lab-solutions: setup      ## open JupyterLab on solutions/ and build/executed/ (self-learners; copies nothing)
	$(BIN)/lmcourse lab --solutions $(if $(LAB_ARGS),-- $(LAB_ARGS))

solutions: setup          ## run every solution notebook headlessly, .ipynb + .html in build/executed/ (PROFILE=tiny|cpu|gpu, TIMEOUT=s per cell)
	$(BIN)/lmcourse solutions --out build/executed $(if $(PROFILE),--profile $(PROFILE)) $(if $(TIMEOUT),--timeout $(TIMEOUT))

# compileall: the course package's bytecode, written before the tests start kernels. Where
# PYTHONDONTWRITEBYTECODE is set (containers, CI) nothing else writes it, and every kernel and process
# a test starts would compile lmcourse anew: about a second of CPU each, hundreds of times a run.
test: setup               ## lint, then the whole test suite (what CI runs)
	$(BIN)/ruff check lmcourse tests bench autograder/masters autograder/variants
	$(BIN)/python -m compileall -q lmcourse tests
	$(PYTEST)

test-quick: setup         ## the tests not marked slow
	$(PYTEST) -m "not slow"

build: setup              ## masters -> autograder/source, notebooks/, solutions/
	$(BIN)/lmcourse build

grade: setup              ## make grade ASSIGNMENT=01_ngram SUBMISSIONS=path/to/folder-or.zip
	@test -n "$(ASSIGNMENT)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade ASSIGNMENT=01_ngram SUBMISSIONS=path"; exit 2; }
	$(BIN)/lmcourse grade $(ASSIGNMENT) $(SUBMISSIONS) --out build/grades

doctor: setup             ## versions, device, threads, sandbox, disk, kernel, corpus; what to fix
	$(BIN)/lmcourse doctor

# bench/gpu_check.py on a CUDA GPU (exit 2 without one); GPU_CHECK_ARGS=--allow-cpu runs its CPU side,
# GPU_CHECK_ARGS=--quick the short run; LMCOURSE_NANOGPT=<a nanoGPT checkout> adds the training ratio
gpu-check: setup          ## the GPU path in one command: notebooks, lmcourse train (bf16, fp16, fast paths), decoding and training vs transformers and nanoGPT
	$(BIN)/python bench/gpu_check.py $(GPU_CHECK_ARGS)

# every bench/bench_*.py at full size, in turn (attention, decode, gpt, grade, ngram, train today): each
# prints its figures and asserts nothing; see each file's docstring for what it measures and its options
bench: setup              ## run every benchmark in bench/ (full size: tens of minutes on a laptop)
	@set -e; for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b; done

clean:                    ## remove build/ (never your work/ folder)
	rm -rf build .pytest_cache
