# Thin wrappers; see README.md. Everything runs inside .venv, created on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# CPU build of torch, installed before the project so pip never pulls a multi-GB CUDA build.
# On a GPU machine: install your CUDA torch into .venv first, then `make setup` keeps it.
TORCH  ?= torch==2.13.0
# tests on every core (at most 4 workers); groups that share an expensive fixture stay on one worker
PYTEST ?= $(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadgroup

.PHONY: setup lab test test-quick build solutions grade doctor bench clean

$(BIN)/lmcourse: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BIN)/lmcourse

setup: $(BIN)/lmcourse

lab: setup                ## set up, fetch the corpus, open JupyterLab on the student notebooks
	$(BIN)/lmcourse doctor --fetch
	$(BIN)/jupyter lab notebooks/ $$([ "$$(id -u)" = 0 ] && echo --allow-root)  # containers and Colab run as root

solutions: setup          ## run every solution notebook headlessly (no browser needed)
	$(BIN)/lmcourse solutions --out build/executed

test: setup               ## lint, then the whole test suite (what CI runs)
	$(BIN)/ruff check lmcourse tests bench
	$(PYTEST)

test-quick: setup
	$(PYTEST) -m "not slow"

build: setup              ## masters -> autograder/source, notebooks/, solutions/
	$(BIN)/lmcourse build

grade: setup              ## make grade ASSIGNMENT=01_ngram SUBMISSIONS=path/to/folder-or.zip
	@test -n "$(ASSIGNMENT)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade ASSIGNMENT=01_ngram SUBMISSIONS=path"; exit 2; }
	$(BIN)/lmcourse grade $(ASSIGNMENT) $(SUBMISSIONS) --out build/grades

doctor: setup
	$(BIN)/lmcourse doctor

bench: setup
	$(BIN)/python bench/bench_ngram.py
	$(BIN)/python bench/bench_gpt.py

clean:
	rm -rf build .pytest_cache
