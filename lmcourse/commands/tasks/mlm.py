"""``lmcourse train mlm``: notebook 06's masked language model on the course corpus, word by word."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from .task import Job, Task, TrainInputError, done_text, recipe_flags, recipe_with, sizes_text, wall_text

__all__ = ["TASK"]


def _description() -> str:
    from ...recipes import mlm

    return ("Train notebook 06's masked language model (lmcourse.reference.mlm.MaskedLM, BERT's 80/10/10 masking of "
            "15 % of the words) on the course corpus, one token per word, split by play, with the course's one loop; "
            "then score it on blanks of the validation plays (top-1 and top-5, against guessing the most frequent "
            "words), as the notebook does. Sizes by profile (the notebook's, lmcourse.recipes.mlm): "
            + sizes_text(mlm) + ".")


def _epilog() -> str:
    return ("The notebook's cpu run (800 steps of 32 windows) ends on the plateau where a masked LM predicts the "
            "word frequencies; in the runs the notebook describes, the validation loss dropped after 120,000 to "
            "480,000 windows: try --profile cpu --steps 20000, or --batch_size 128 --steps 10000.")


def _flags(p: argparse.ArgumentParser, g) -> None:
    from ...recipes import mlm

    recipe_flags(p, mlm, {
        "steps": "optimisation steps", "batch_size": "windows per step", "block": "words per window",
        "vocab": "words kept in the vocabulary (the rest: <unk>)", "n_embd": "model width", "n_layer": "blocks",
        "n_head": "attention heads", "evals": "validations in the run (every steps // evals steps)",
        "n_blanks": "validation blanks scored at the end", "lr": "peak learning rate",
        "dropout": "dropout after the embeddings and in the blocks"})
    p.add_argument("--causal", action="store_true", help="train the same network left to right instead (the "
                   "notebook's opponent: next-word batches, blanks scored from the word before)")
    p.add_argument("--keep_best", action=argparse.BooleanOptionalAction, help="end with the weights of the "
                   "lowest validation loss, as the notebook does (default: on)")
    p.add_argument("--seed", type=int, help="seed of the initialisation, the batches and the masks (default 0)")


def _prepare(a: dict, profile: str, prog: str) -> Job:
    import torch

    from ...data import encode_text, get_batch, load_shakespeare
    from ...nn.mlm import MLMConfig
    from ...recipes import mlm
    from ...reference.mlm import MaskedLM, mask_tokens
    from ...tokenizers import SPECIALS, WordTokenizer

    r = recipe_with(mlm.recipe(profile), a)
    if r.n_embd % r.n_head:
        raise TrainInputError(f"--n_embd {r.n_embd} must be divisible by --n_head {r.n_head} (each head "
                              "gets n_embd / n_head dimensions)")
    causal, seed = bool(a.get("causal")), a.get("seed", 0)
    corpus = load_shakespeare()  # CorpusUnavailable (no network, no cache) says what to do
    train_text, val_text = corpus.text("train"), corpus.text("val")
    if r.chars is not None:  # tiny: the first part of the text, as the notebook
        train_text, val_text = train_text[:r.chars], val_text[:r.chars // 5]
    tok = WordTokenizer.from_text(train_text, max_size=r.vocab, specials=list(SPECIALS) + [mlm.MASK_TOKEN])
    train_ids, val_ids = encode_text(train_text, tok), encode_text(val_text, tok)
    V, mask_id = tok.vocab_size, tok.stoi[mlm.MASK_TOKEN]
    special_ids = [tok.stoi[s] for s in SPECIALS] + [mask_id]
    if min(len(train_ids), len(val_ids)) <= r.block:
        raise TrainInputError(f"--block {r.block} is longer than the text ({len(val_ids):,} validation "
                              "words); use a smaller --block")
    try:
        config = MLMConfig(vocab_size=V, **r.model_sizes(causal=causal))
        torch.manual_seed(seed)
        model = MaskedLM(config)
    except (ValueError, AssertionError) as exc:
        raise TrainInputError(str(exc)) from exc

    def mlm_batch(tokens, batch_size, block_size, generator, dev):
        x, _ = get_batch(tokens, batch_size, block_size, generator)
        inputs, labels = mask_tokens(x, mask_id, V, special_ids, p=0.15, generator=generator)
        return inputs.to(dev), labels.to(dev)

    cfg = r.train_config(seed=seed, keep_best=a.get("keep_best", True))
    what = "left to right (causal)" if causal else "masked LM"
    header = [f"{prog} mlm: {what}, {profile} profile, {sum(q.numel() for q in model.parameters()):,} parameters "
              f"({config.n_layer} layers x {config.n_embd} wide, {config.n_head} heads), {V:,} words in the "
              f"vocabulary, {len(train_ids):,} training and {len(val_ids):,} validation words"]
    return Job(model, "a masked LM", asdict(config), train_ids, val_ids, cfg, list(tok.itos),
               "pass the same --vocab and --profile", header, batch_fn=None if causal else mlm_batch,
               extra={"vocabulary": list(tok.itos), "task": "mlm"},
               own={"recipe": r, "train_ids": train_ids, "val_ids": val_ids, "mask_id": mask_id,
                    "special_ids": special_ids, "causal": causal, "seed": seed, "V": V})


def _blanks(ids, n: int, block: int, special_ids: list[int], seed: int):
    """Notebook 06's blanks: ``n`` windows of ``ids`` and one position in each holding an ordinary word
    (never the first, so a left-to-right model has a word before it): ``(windows (n, T), positions (n,))``."""
    import torch

    from ...data import get_batch

    g = torch.Generator().manual_seed(seed)
    x, _ = get_batch(ids, n, block, g)
    ordinary = ~torch.isin(x, torch.tensor(special_ids))
    ordinary[:, 0] = False
    return x, torch.multinomial(ordinary.double(), 1, generator=g)[:, 0]


def _blank_scores(model, x, pos, mask_id: int, causal: bool, device) -> dict[int, float]:
    """Top-1 and top-5 accuracy at the blanks: the word hidden behind [MASK], or predicted from the word
    before it when ``causal``."""
    import torch

    from ...train import model_logits

    model.eval()
    logits = []
    with torch.no_grad():
        for i in range(0, len(x), 256):  # a few hundred windows per forward pass: memory stays small
            xi, pi = x[i:i + 256].clone(), pos[i:i + 256]
            r = torch.arange(len(xi))
            if not causal:
                xi[r, pi] = mask_id
            out = model_logits(model(xi.to(device)))
            logits.append(out[r, pi - 1 if causal else pi].float().cpu())
    top = torch.cat(logits).topk(5, dim=-1).indices  # (n, 5)
    true = x[torch.arange(len(x)), pos]
    return {k: float((top[:, :k] == true[:, None]).any(dim=1).double().mean()) for k in (1, 5)}


def _summary(job: Job, hist, env, a: dict) -> str:
    import torch

    o = job.own
    r, special_ids = o["recipe"], o["special_ids"]
    x, pos = _blanks(o["val_ids"], r.n_blanks, r.block, special_ids, o["seed"] + 6)
    scores = _blank_scores(job.model, x, pos, o["mask_id"], o["causal"], env.device)
    freq = torch.bincount(o["train_ids"], minlength=o["V"]).double()  # the baseline: training's most frequent words
    freq[special_ids] = 0
    true = x[torch.arange(r.n_blanks), pos]
    base = {k: float(torch.isin(true, freq.topk(k).indices).double().mean()) for k in (1, 5)}
    kept = f" (weights of step {hist.best_step}, the lowest)" if hist.best_step is not None else ""
    return (f"{done_text(hist, job.cfg.steps)}, val loss "
            f"{hist.best_val_loss if hist.best_step is not None else hist.final_val_loss:.4f}{kept}, "
            f"top-1 {scores[1]:.1%}, top-5 {scores[5]:.1%} on {r.n_blanks:,} validation blanks (most frequent "
            f"words: {base[1]:.1%}, {base[5]:.1%}), {wall_text(hist, job)}")


def _checkpoint_stem(a: dict) -> str:
    return "train_mlm_causal" if a.get("causal") else "train_mlm"


TASK = Task("mlm", "notebook 06's masked language model on Shakespeare's words, then its fill-in-the-blank accuracy",
            _description, _flags, _prepare, _summary, _checkpoint_stem, epilog=_epilog,
            checkpoint_note=" (with --causal: train_mlm_causal_<profile>.pt); lmcourse.reference.mlm.load_mlm reads "
            "the last step's weights from it, the kept ones (--keep_best) are under its key 'best'")
