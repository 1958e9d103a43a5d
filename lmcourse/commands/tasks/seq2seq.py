"""``lmcourse train seq2seq``: notebook 09's encoder-decoder on the generated date task."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from .task import Job, Task, TrainInputError, done_text, recipe_flags, recipe_with, sizes_text, wall_text

__all__ = ["TASK"]


def _description() -> str:
    from ...recipes import seq2seq

    return ("Train notebook 09's encoder-decoder (lmcourse.nn.seq2seq) on the generated date task (lmcourse.dates) "
            "with the course's one loop, then measure exact match on the test dates. Sizes by profile (the "
            "notebook's, lmcourse.recipes.seq2seq): " + sizes_text(seq2seq) + ".")


def _flags(p: argparse.ArgumentParser, g) -> None:
    from ...recipes import seq2seq

    recipe_flags(p, seq2seq, {
        "n_embd": "width of both stacks", "n_layer": "blocks in each stack", "n_head": "attention heads",
        "steps": "optimisation steps", "batch_size": "pairs per step", "n_train": "training pairs",
        "n_val": "validation pairs", "n_test": "test pairs, for the exact match",
        "evals": "validations in the run (every steps // evals steps)", "lr": "peak learning rate"})
    p.add_argument("--seed", type=int, help="seed of the data, the initialisation and the batches (default 0)")


def _prepare(a: dict, profile: str, prog: str) -> Job:
    import torch

    from ... import dates
    from ...nn.seq2seq import EncoderDecoder, Seq2SeqConfig
    from ...recipes import seq2seq

    r = recipe_with(seq2seq.recipe(profile), a)
    seed = a.get("seed", 0)
    vocab = dates.CharVocab()
    try:
        config = Seq2SeqConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), pad_id=dates.PAD_ID,
                               **r.model_sizes())
    except ValueError as exc:
        raise TrainInputError(str(exc)) from exc
    splits = dates.make_splits(r.n_train, r.n_val, r.n_test, seed=seed)
    torch.manual_seed(seed)
    model = EncoderDecoder(config)
    header = [f"{prog} seq2seq: {profile} profile, {model.num_params():,} parameters ({config.n_enc_layer}+"
              f"{config.n_dec_layer} layers x {config.n_embd} wide, {config.n_head} heads), {len(splits['train']):,} "
              "training pairs"]
    return Job(model, "an encoder-decoder", asdict(config), splits["train"], splits["val"],
               r.train_config(seed=seed), vocab.itos, "train anew (--overwrite)", header,
               batch_fn=dates.sample_batch, loss_fn=dates.padded_cross_entropy,
               extra={"vocabulary": vocab.itos, "task": "lmcourse.dates"}, own={"splits": splits, "vocab": vocab})


def _summary(job: Job, hist, env, a: dict) -> str:
    from ... import dates
    from ...nn.seq2seq import exact_match, greedy_decode

    model, vocab, test = job.model, job.own["vocab"], job.own["splits"]["test"]
    model.eval()
    sources, targets = [s for s, _ in test], [t for _, t in test]
    outputs = []
    for i in range(0, len(sources), 500):
        src = dates.make_batch([(s, "0") for s in sources[i:i + 500]], vocab, env.device).src
        outputs += [vocab.decode(r) for r in greedy_decode(model, src, dates.BOS_ID, dates.EOS_ID, 11).cpu()]
    for s, o, t in list(zip(sources, outputs, targets))[:5]:
        print(f"  {s:<36} -> {o:<12} {'ok' if o == t else 'expected ' + t}")
    return (f"{done_text(hist, job.cfg.steps)}, val loss {hist.final_val_loss:.4f}, exact match "
            f"{exact_match(outputs, targets):.1%} on {len(targets)} test dates, {wall_text(hist, job)}")


def _checkpoint_stem(a: dict) -> str:
    return "train_seq2seq"


TASK = Task("seq2seq", "notebook 09's encoder-decoder on the generated date task, then its exact match",
            _description, _flags, _prepare, _summary, _checkpoint_stem, compile_on_cuda=False)
