"""The gpu profiles of 05, 06 and 09 fit a 16 GB T4: bench/bench_gpu_fit.py's estimate, in float32.

The estimate (parameters and AdamW state counted, one training step's tensors measured on the CPU at two small
batches and extrapolated to the profile's batch, x1.2 for fragmentation, + 0.5 GiB of CUDA context, against the
15 GiB a T4 shows) is an estimate, not a measurement on a T4; the test keeps a later change of the profiles or
the models from making it exceed the card unnoticed.
"""

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fit():
    spec = importlib.util.spec_from_file_location("bench_gpu_fit", ROOT / "bench" / "bench_gpu_fit.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield module
    torch.set_num_threads(threads)


def test_the_tracker_counts_live_tensors_and_their_peak(fit):
    mode = fit.LiveBytes()
    x = torch.ones(100, 100)  # made outside: not counted
    with mode:
        y = x @ x  # 40,000 bytes
        z = y + 1  # 40,000 more: the peak
        del y  # freed
        w = z.view(-1)  # a view: no new storage
    assert mode.peak == 80_000 and mode.now == 40_000 and mode.ops == 3
    del z, w
    assert mode.now == 0


def test_every_gpu_profile_run_fits_a_t4_in_float32(fit):
    runs = fit.runs()
    assert {r.notebook for r in runs} == {"05_gpt", "06_mlm", "09_encoder_decoder"}
    for run in runs:
        e = fit.estimate(run, small=(1, 2), full=False)
        assert e.peak32 > 0 and e.fixed_bytes >= 12 * e.params  # weights + two AdamW moments, 4 bytes each
        assert e.fits, (f"{run.notebook} {run.name}: an estimated {e.need32_gib:.1f} GiB at batch {run.batch_size} "
                        f"exceeds the {fit.T4_VISIBLE_GIB} GiB of a T4; shrink the gpu profile's batch")


def test_a_batch_too_large_for_a_t4_is_found(fit):
    run = next(r for r in fit.runs() if r.notebook == "06_mlm")
    e = fit.estimate(dataclasses.replace(run, batch_size=run.batch_size * 64), small=(1, 2), full=False)
    assert not e.fits and e.need32_gib > fit.T4_VISIBLE_GIB


def test_the_sizes_are_the_recipes(fit):
    """The runs are built from lmcourse.recipes (what the notebooks train), at the gpu profile."""
    from lmcourse.recipes import mlm, seq2seq

    runs = {(r.notebook, r.name): r for r in fit.runs()}
    m, s = mlm.recipe("gpu"), seq2seq.recipe("gpu")
    masked = runs[("06_mlm", "masked LM")]
    assert (masked.steps, masked.batch_size, masked.validations) == (m.steps, m.batch_size, m.evals + 1)
    assert masked.build().config.n_embd == m.n_embd and masked.build().config.block_size == m.block
    encdec, gpt09 = runs[("09_encoder_decoder", "encoder-decoder")], runs[("09_encoder_decoder", "decoder-only GPT")]
    assert (encdec.steps, gpt09.steps, encdec.batch_size) == (s.steps, s.gpt_steps, s.batch_size)
    assert encdec.build().config.n_enc_layer == s.n_layer and gpt09.build().config.n_layer == 2 * s.n_layer + 1
