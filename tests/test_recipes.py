"""lmcourse.recipes: each training notebook's recipe exists once.

The masters, ``lmcourse train`` and the GPU-fit bench read their sizes from the recipes; a second copy
(a table by profile, a size chosen by the profile's name, a run's config written with numbers, a model
config with a recipe's sizes)
in any of them fails here, wherever it is outside a test cell (test cells build small models of their
own on purpose)."""

from __future__ import annotations

import ast
import re
from dataclasses import FrozenInstanceError, fields, replace

import pytest

from lmcourse import recipes
from lmcourse.runtime import PROFILES, get_profile
from lmcourse.train import TrainConfig

from .conftest import ROOT

# the files that read a recipe: none of them may hold a copy of one
READERS = ["lmcourse/commands/train.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "lmcourse" / "commands" /
                                                                                  "tasks").glob("*.py")),
           "bench/bench_gpu_fit.py",
           *(f"autograder/masters/{name}.py" for name in recipes.BY_NOTEBOOK)]


def _non_test_cells(text: str) -> str:
    """A master without its test cells (``# %% tests=...`` up to the next cell), lines kept in place."""
    out, in_tests = [], False
    for line in text.splitlines():
        if line.startswith("# %%"):
            in_tests = line.startswith("# %% tests=")
        out.append("" if in_tests else line)
    return "\n".join(out)


def _numbers(node: ast.AST) -> list:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def second_copies(source: str, where: str) -> list[str]:
    """Where ``source`` holds training sizes of its own: each as ``where:line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if len(keys & set(PROFILES)) >= 2:
                found.append((node.lineno, "a table by profile"))
        elif isinstance(node, ast.IfExp):
            names = {n.value for n in ast.walk(node.test) if isinstance(n, ast.Constant)}
            if names & set(PROFILES) and (_numbers(node.body) or _numbers(node.orelse)):
                found.append((node.lineno, "a number chosen by the profile's name"))
        elif isinstance(node, ast.Call):
            name = _called(node)
            literal = {k.arg: k.value.value for k in node.keywords
                       if k.arg and isinstance(k.value, ast.Constant) and _numbers(k.value)}
            if name in ("TrainConfig", "from_profile") and any(_numbers(k.value) for k in node.keywords):
                found.append((node.lineno, f"{name}(...) with numbers"))
            elif name.endswith("Config") and _a_recipes_model(literal):
                found.append((node.lineno, f"{name}(...) with a recipe's sizes ({_a_recipes_model(literal)})"))
    return [f"{where}:{line}: {what}" for line, what in sorted(found)]


def _a_recipes_model(literal: dict) -> str:
    """The recipe whose model sizes these literal keywords repeat (three at least, none different), or ''.
    A model built for a demonstration (other sizes) is not a copy of a run."""
    for notebook, module in recipes.BY_NOTEBOOK.items():
        for name in PROFILES:
            sizes = module.recipe(name).model_sizes()
            shared = [k for k in literal if k in sizes]
            if len(shared) >= 3 and all(literal[k] == sizes[k] for k in shared):
                return f"{notebook} at {name}"
    return ""


@pytest.mark.parametrize("path", READERS)
def test_no_file_that_reads_a_recipe_holds_a_copy(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    if path.startswith("autograder/masters/"):
        text = _non_test_cells(text)
    copies = second_copies(text, path)
    assert not copies, ("training sizes written outside lmcourse.recipes (put them in the notebook's recipe "
                        "and read them from there):\n  " + "\n  ".join(copies))


PLANTED = {
    "06's old table": 'SIZES = {"tiny": dict(vocab=600, steps=30), "cpu": dict(vocab=2000, steps=800)}[P.name]\n',
    "a table of blanks": 'n_blanks = {"tiny": 256, "cpu": 2000, "gpu": 4000}[P.name]\n',
    "05's old learning rate": 'cfg = TrainConfig.from_profile(P, lr=1e-3 if P.name == "gpu" else 5e-3, seed=0)\n',
    "a number by profile": 'steps = P.train_steps * 2 // 3 if P.name == "cpu" else P.train_steps\n',
    "09's old model": "seq = Seq2SeqConfig(src_vocab_size=V, n_enc_layer=2, n_head=4, n_embd=64, pad_id=PAD)\n",
    "a run written out": "cfg = TrainConfig(steps=1500, batch_size=64, lr=3e-3)\n",
}


@pytest.mark.parametrize("what", PLANTED)
def test_a_planted_copy_is_found(what):
    assert second_copies(PLANTED[what], "planted")


@pytest.mark.parametrize("path", READERS)
def test_a_copy_planted_in_a_reader_fails_the_check(path):
    """The check finds a copy in each real file it watches (and a test cell's is left alone)."""
    text = (ROOT / path).read_text(encoding="utf-8")
    planted = text + "\n\n# %%\n" + PLANTED["06's old table"]
    if path.startswith("autograder/masters/"):
        assert second_copies(_non_test_cells(planted), path)
        in_a_test_cell = text + "\n\n# %% tests=\"planted\"\n" + PLANTED["06's old table"]
        assert second_copies(_non_test_cells(in_a_test_cell), path) == second_copies(_non_test_cells(text), path)
    else:
        assert second_copies(planted, path)


def test_only_calls_and_tables_count():
    """Names and arithmetic on recipe fields are not copies; the default of a dataclass field is not a run."""
    fine = ("config = GPTConfig(vocab_size=tok.vocab_size, **R.model_sizes())\n"
            "demo = GPTConfig(vocab_size=65, block_size=32, n_layer=12, n_head=4, n_embd=64)\n"
            "cfg = R.train_config(seed=rt.seed, quiet=True)\n"
            "x = train_ids[:config.block_size + 1]\n"
            "n = 40 if verbose else 120\n")
    assert second_copies(fine, "fine") == []


@pytest.mark.parametrize("module", list(recipes.BY_NOTEBOOK.values()), ids=list(recipes.BY_NOTEBOOK))
def test_every_recipe_builds_a_run_at_every_profile(module):
    for name in PROFILES:
        r = module.recipe(name)
        assert r.profile == name
        cfg = r.train_config()
        assert isinstance(cfg, TrainConfig) and cfg.steps >= 1 and cfg.warmup_steps <= cfg.steps
        assert cfg.eval_interval <= cfg.steps
        sizes = r.model_sizes()
        assert sizes["n_embd"] % sizes.get("n_head", 1) == 0
        with pytest.raises(FrozenInstanceError):
            r.steps = 1  # a recipe is data: a change is replace(recipe, ...), never an edit in place
        assert r.train_config(seed=7).seed == 7 and r.train_config().seed == 0  # overrides, a fresh copy each time
    tiny, gpu = module.recipe("tiny"), module.recipe("gpu")
    assert tiny.train_config().steps <= gpu.train_config().steps and tiny.n_embd < gpu.n_embd


@pytest.mark.parametrize("module", [recipes.gpt, recipes.mlm, recipes.seq2seq], ids=["gpt", "mlm", "seq2seq"])
def test_derived_settings_follow_the_steps(module):
    """The warm-up of the models ``lmcourse train`` trains is a share of the recipe's steps, so
    ``replace(recipe, steps=...)`` (what ``lmcourse train --steps`` does) keeps it in proportion."""
    r = module.recipe("cpu")
    longer = replace(r, steps=r.steps * 10).train_config()
    assert longer.steps == r.steps * 10
    assert longer.warmup_steps > r.train_config().warmup_steps


def test_the_recipes_are_the_masters():
    """Each master reads its recipe (imports it and builds its run from it)."""
    for name, module in recipes.BY_NOTEBOOK.items():
        text = (ROOT / "autograder" / "masters" / f"{name}.py").read_text(encoding="utf-8")
        short = module.__name__.rpartition(".")[2]
        assert re.search(rf"^from lmcourse\.recipes import {short} as (\w+)$", text, re.M), name
        assert "R.train_config(" in text and ".recipe(P.name)" in text, name


def test_profile_sizes_the_recipes_use_are_the_profiles():
    """Where a recipe takes the profile's size (05's model, the batch of 06), it is the profile's, not a copy."""
    from lmcourse.recipes import gpt, mlm

    for name in PROFILES:
        p, g = get_profile(name), gpt.recipe(name)
        assert (g.n_layer, g.n_head, g.n_embd, g.block_size) == (p.n_layer, p.n_head, p.n_embd, p.block_size)
        assert mlm.recipe(name).batch_size == p.batch_size
    assert {f.name for f in fields(gpt.GPTRecipe)} >= {"steps", "lr", "dropout", "sample_chars"}
