"""Notebook 11's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

import torch

from .finetuning import (
    Q_CALIBRATE_LETTER,
    Q_LORA_B_LETTER,
    Q_UNFREEZE_LETTER,
    add_lora_case,
    add_lora_compare,
    classifier_case,
    freeze_case,
    freeze_compare,
    lora_forward_case,
    lora_forward_compare,
    lora_init_case,
    lora_init_compare,
    lora_merge_case,
    lora_slips,
    merge_compare,
    pool_case,
    pool_compare,
    pool_slips,
    score_case,
    score_slips_compare,
    scores_case,
    scores_compare,
    slip_scores,
    slips_of,
)
from .spec import Case
from .tensors import tensor

__all__ = ["HIDDEN"]

_LONG_P, _LONG_C = [[1] * 5], [[2, 3, 4, 5, 6, 7, 8]]
_P, _C = [[10, 1], [2], [4, 4, 4, 4, 4, 4, 4], [7, 3, 2]], [[1, 1, 1, 1, 1, 1], [0], [9], [8, 8]]

HIDDEN = {
    "score_continuations": (
        Case("four pairs, a one-token prompt and a one-token continuation among them", score_case(_P, _C, 0, 1170),
             compare=score_slips_compare("the scores of four pairs"), expect=slip_scores(_P, _C, 1170)),
        Case("four pairs padded with id 3", score_case(_P, _C, 3, 1170),
             compare=score_slips_compare("the scores of four pairs, pad_id=3"), expect=slip_scores(_P, _C, 1170)),
        Case("a pair that fills the whole context (12 tokens)", score_case(_LONG_P, _LONG_C, 0, 1171),
             compare=score_slips_compare("a pair of 12 tokens"), expect=slip_scores(_LONG_P, _LONG_C, 1171)),
    ),
    "zero_shot_scores": (
        Case("zero_shot_scores with lengths, another seed", scores_case(1180, True, False),
             compare=scores_compare("lengths, seed 1180"), expect=slips_of(1180, True, False)),
        Case("zero_shot_scores calibrated, another seed", scores_case(1181, False, True),
             compare=scores_compare("calibrated, seed 1181"), expect=slips_of(1181, False, True)),
        Case("zero_shot_scores with both, another seed", scores_case(1182, True, True),
             compare=scores_compare("both, seed 1182"), expect=slips_of(1182, True, True)),
    ),
    "q_calibrate": (Q_CALIBRATE_LETTER,),
    "pool_hidden": (
        Case("pool_hidden 'last', rows of 1, 4, 2, 7 real tokens", pool_case([1, 4, 2, 7], "last", 1190, d=6),
             compare=pool_compare("'last', four rows"), expect=pool_slips([1, 4, 2, 7], "last", 1190, d=6)),
        Case("pool_hidden 'mean', rows of 1, 4, 2, 7 real tokens", pool_case([1, 4, 2, 7], "mean", 1191, d=6),
             compare=pool_compare("'mean', four rows"), expect=pool_slips([1, 4, 2, 7], "mean", 1191, d=6)),
    ),
    "SequenceClassifier": (
        Case("the class logits, 'last', one block, rows of 2, 5 and 4 tokens",
             classifier_case("last", ([5, 5], [1, 2, 3, 4, 5], [9, 8, 7, 6]), 1200, 1),
             compare=tensor(atol=1e-10, rtol=1e-10, what="'last', one block")),
        Case("the class logits, 'mean', three blocks",
             classifier_case("mean", ([5, 5], [1, 2, 3, 4, 5], [9, 8, 7, 6]), 1201, 3),
             compare=tensor(atol=1e-10, rtol=1e-10, what="'mean', three blocks")),
        Case("the class logits, float32, 'last'",
             classifier_case("last", ([1, 2, 3], [4]), 1202, 2, torch.float32),
             compare=tensor(dtype="the model's dtype", atol=1e-5, rtol=1e-5, what="a float32 classifier")),
    ),
    "freeze": (
        Case("freeze(model, 'last', k=3), then 'last' with k=1, then 'all'",
             freeze_case(("last", 3), ("last", 1), ("all", None)), compare=freeze_compare),
        Case("freeze(model, 'head'), then 'last', k=2", freeze_case(("head", None), ("last", 2)),
             compare=freeze_compare),
    ),
    "q_unfreeze": (Q_UNFREEZE_LETTER,),
    "LoRALinear": (
        Case("LoRALinear(nn.Linear(6, 5, bias=False), r=3, alpha=1) at initialisation", lora_init_case(3, 1.0, 1210,
                                                                                                       bias=False),
             compare=lora_init_compare),
        Case("LoRALinear float32, r=1, alpha=16", lora_init_case(1, 16.0, 1211, dtype=torch.float32),
             compare=lora_init_compare),
        Case("LoRALinear r=1, alpha=3, inputs (4, 6)", lora_forward_case(1, 3.0, 1212, shape=(4, 6)),
             compare=lora_forward_compare("r = 1, alpha = 3"), expect=lora_slips(1, 3.0, 1212, shape=(4, 6))),
        Case("merge() with r=3, alpha=6, no bias", lora_merge_case(3, 6.0, 1213, bias=False), compare=merge_compare),
    ),
    "add_lora": (
        Case("add_lora(model of 2 blocks, r=1, alpha=2)", add_lora_case(1, 2.0, 2, 1220), compare=add_lora_compare),
    ),
    "q_lora_b": (Q_LORA_B_LETTER,),
}
