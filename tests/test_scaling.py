"""lmcourse.scaling (notebook 10's sweep, its table and pictures) and its recipe, lmcourse.recipes.scaling."""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError, replace

import pytest

from lmcourse import scaling
from lmcourse.nn.gpt import GPT, GPTConfig
from lmcourse.recipes import scaling as scaling_recipe
from lmcourse.runtime import PROFILES


def _non_embedding(n_layer: int, n_embd: int, R) -> int:
    cfg = GPTConfig(vocab_size=65, block_size=R.block_size, n_layer=n_layer, n_head=R.n_head(n_embd), n_embd=n_embd)
    return GPT(cfg).num_params(non_embedding=True)


@pytest.fixture(scope="module")
def shakespeare():
    from lmcourse.data import encode_split, load_shakespeare
    from lmcourse.tokenizers import CharTokenizer

    corpus = load_shakespeare(quiet=True)
    tok = CharTokenizer.from_text(corpus.text("train"))
    return encode_split(corpus, "train", tok), encode_split(corpus, "val", tok), tok.vocab_size


@pytest.fixture(scope="module")
def tiny_rows(shakespeare):
    train_ids, val_ids, V = shakespeare
    return scaling.run_sweep(scaling_recipe.recipe("tiny"), train_ids, val_ids, V, device="cpu")


# --- the recipe ----------------------------------------------------------------------------------------

def test_the_cpu_sweep_spans_the_sizes_the_notebook_promises():
    """At least a factor 10 in non-embedding parameters, the largest above 1e5 (where small
    reproductions start to see clean laws), three budgets at least."""
    R = scaling_recipe.recipe("cpu")
    sizes = [_non_embedding(n_layer, n_embd, R) for n_layer, n_embd in R.sizes]
    assert sizes == sorted(sizes)
    assert sizes[-1] / sizes[0] >= 10 and sizes[-1] > 1e5
    assert len(R.budgets) >= 3 and list(R.budgets) == sorted(R.budgets)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_has_a_recipe_and_each_run_ends_its_own_schedule(profile):
    R = scaling_recipe.recipe(profile)
    assert R.profile == profile
    for _, n_embd in R.sizes:
        assert n_embd % R.n_head(n_embd) == 0
    cfg = R.train_config(123, seed=4)
    assert cfg.steps == 123 and cfg.eval_interval == 123 and cfg.seed == 4
    assert cfg.warmup_steps < cfg.steps
    with pytest.raises(FrozenInstanceError):
        R.lr = 1.0


def test_a_runs_learning_rate_reaches_its_floor_at_its_last_step():
    from lmcourse.train import lr_at

    cfg = scaling_recipe.recipe("cpu").train_config(400)
    assert lr_at(cfg.steps - 1, cfg) == pytest.approx(cfg.lr * cfg.min_lr_ratio)
    assert lr_at(cfg.steps // 2, cfg) > 2 * cfg.lr * cfg.min_lr_ratio


# --- the sweep -----------------------------------------------------------------------------------------

def test_the_tiny_sweep_trains_every_size_at_every_budget(tiny_rows):
    R = scaling_recipe.recipe("tiny")
    assert [(r.budget, (r.n_layer, r.n_embd)) for r in tiny_rows] == [(b, s) for b in R.budgets for s in R.sizes]
    for r in tiny_rows:
        assert r.params == _non_embedding(r.n_layer, r.n_embd, R)
        assert r.params_with_embeddings > r.params
        assert r.tokens == r.steps * R.batch_size * R.block_size
        assert r.flops == 6 * r.params * r.tokens
        # whole steps: the FLOPs trained are the budget within half a step's
        assert abs(r.flops - r.budget) <= 0.5 * 6 * r.params * R.batch_size * R.block_size + 1e-6
        assert 0 < r.val_loss < math.log(65) + 0.5 and r.seconds >= 0


def test_more_compute_lowers_the_loss_of_a_size(tiny_rows):
    """The smallest model trained 3x longer (the tiny budgets) ends lower: the runs do train."""
    small = sorted((r for r in tiny_rows if (r.n_layer, r.n_embd) == (1, 16)), key=lambda r: r.budget)
    assert small[-1].val_loss < small[0].val_loss


def test_a_sweep_is_repeatable(shakespeare, tiny_rows):
    train_ids, val_ids, V = shakespeare
    R = scaling_recipe.recipe("tiny")
    again = scaling.run_sweep(R, train_ids, val_ids, V, sizes=R.sizes[:1], budgets=R.budgets[:1], device="cpu")
    assert again[0].val_loss == tiny_rows[0].val_loss


# --- the table -----------------------------------------------------------------------------------------

def test_the_csv_round_trip_keeps_every_value(tiny_rows, tmp_path):
    path = tmp_path / "sweep.csv"
    text = scaling.write_csv(tiny_rows, path, comments=["made by a test"])
    assert text.startswith("# made by a test\n") and path.read_text() == text
    assert scaling.read_csv(path) == tiny_rows
    assert scaling.read_csv(text) == tiny_rows


def test_a_table_without_the_columns_is_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="missing"):
        scaling.read_csv(path)


def test_the_shipped_cpu_table_is_the_cpu_recipes_sweep():
    """The table the analysis exercises read: every size of the cpu recipe at every budget, as the
    recipe computes them, the FLOPs within half a step of the budget, losses a character model reaches
    (below the uniform guess ln 65, above 1), and how it was made in its header."""
    R = scaling_recipe.recipe("cpu")
    rows = scaling.shipped_sweep("cpu")
    assert sorted({r.budget for r in rows}) == sorted(R.budgets)
    assert sorted({(r.n_layer, r.n_embd) for r in rows}) == sorted(R.sizes)
    assert len(rows) == len(R.sizes) * len(R.budgets)
    sizes = sorted({r.params for r in rows})
    assert sizes[-1] / sizes[0] >= 10 and sizes[-1] > 1e5
    for r in rows:
        assert r.params == _non_embedding(r.n_layer, r.n_embd, R)
        assert r.tokens == r.steps * R.batch_size * R.block_size
        assert r.flops == pytest.approx(r.budget, rel=0.05)
        assert 1.0 < r.val_loss < math.log(65)
    from importlib import resources

    header = resources.files("lmcourse").joinpath("data_files", "scaling_sweep_cpu.csv").read_text().splitlines()[:3]
    assert all(line.startswith("# ") for line in header)
    assert "python -m lmcourse.scaling cpu" in header[0] and "torch" in header[2]


def test_the_shipped_held_out_runs_lie_beyond_the_sweep():
    """The held-out runs the notebook's prediction is checked against: sizes of the recipe, trained on
    at least 3 times the largest budget swept."""
    from importlib import resources

    R = scaling_recipe.recipe("cpu")
    rows = scaling.read_csv(resources.files("lmcourse").joinpath("data_files", "scaling_heldout_cpu.csv").read_text())
    assert rows and all((r.n_layer, r.n_embd) in R.sizes for r in rows)
    assert all(r.budget >= 3 * max(R.budgets) and r.flops == pytest.approx(r.budget, rel=0.01) for r in rows)
    assert all(1.0 < r.val_loss < min(x.val_loss for x in scaling.shipped_sweep("cpu")) for r in rows)


def test_only_shipped_profiles_are_offered():
    with pytest.raises(ValueError, match="ships"):
        scaling.shipped_sweep("gpu")


def test_by_budget_groups_and_orders(tiny_rows):
    groups = scaling.by_budget(reversed(tiny_rows))
    assert list(groups) == sorted(groups)
    for budget, runs in groups.items():
        assert all(r.budget == budget for r in runs)
        assert [r.params for r in runs] == sorted(r.params for r in runs)


# --- the pictures ----------------------------------------------------------------------------------------

def test_the_pictures_draw_what_they_are_given(tiny_rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = scaling.frontier(tiny_rows, law=lambda c: 3.0, predicted=(1e9, 2.5), measured=(1e9, 2.6))
    labels = [line.get_label() for line in ax.get_lines()]
    assert sum(label.startswith("N = ") for label in labels) == len({r.params for r in tiny_rows})
    assert "fit" in labels and any(label.startswith("predicted") for label in labels)
    budgets = sorted({r.budget for r in tiny_rows})
    ax = scaling.isoflop_curves(tiny_rows, parabolas={budgets[0]: (0.1, -2.0, 12.0)})
    # one set of points per budget, one parabola and its minimum for the budget given one
    assert len(ax.get_lines()) == len(budgets) + 2
    ax = scaling.optimal_sizes(budgets, [1e3, 2e3], exponent=0.5, coefficient=0.1, published={"Chinchilla": 0.5})
    assert len(ax.get_lines()) == 3
    plt.close("all")


def test_a_changed_recipe_changes_the_run(shakespeare):
    """The sweep reads its sizes from the recipe it is given (a replaced recipe, not a copy)."""
    train_ids, val_ids, V = shakespeare
    R = replace(scaling_recipe.recipe("tiny"), sizes=((1, 16),), budgets=(3e7,))
    rows = scaling.run_sweep(R, train_ids, val_ids, V, device="cpu")
    assert [(r.n_layer, r.n_embd, r.budget) for r in rows] == [(1, 16, 3e7)]
