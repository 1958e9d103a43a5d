"""Each training notebook's recipe, per profile, written once.

A recipe is the model's sizes, the run's :class:`lmcourse.train.TrainConfig` and the notebook's own
sizes (data, evaluation) at one profile (``tiny``, ``cpu``, ``gpu``), as a frozen dataclass. The
notebook's master, ``lmcourse train``, the benches and the tests all read it from here, so a change of
sizes is one edit::

    from lmcourse.recipes import gpt
    R = gpt.recipe("cpu")
    config = GPTConfig(vocab_size=tok.vocab_size, **R.model_sizes())
    cfg = R.train_config(seed=0, quiet=True)

One module per notebook that trains a model of its own (:data:`BY_NOTEBOOK`); a new notebook adds
its module here. Fields a caller sets (seed, device, checkpoint, progress) stay the caller's.
"""

from __future__ import annotations

from . import gpt, mlm, rnn, scaling, seq2seq

__all__ = ["gpt", "mlm", "rnn", "scaling", "seq2seq", "BY_NOTEBOOK"]

# the notebook each recipe module belongs to (its master: autograder/masters/<name>.py)
BY_NOTEBOOK = {"02_rnn": rnn, "05_gpt": gpt, "06_mlm": mlm, "09_encoder_decoder": seq2seq,
               "10_scaling": scaling}
