"""Notebook 12's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

from .instruct import (
    Q_DEDUP_LETTER,
    Q_HELDOUT_LETTER,
    Q_MASK_LETTER,
    chat_case,
    chat_compare,
    dedup_case,
    dedup_compare,
    extraction_case,
    extraction_compare,
    generate_case,
    generate_compare,
    index_case,
    index_compare,
    match_case,
    match_compare,
    sealed_case,
    sft_case,
    sft_compare,
    sft_loss_case,
    sft_loss_compare,
)
from .spec import Case

__all__ = ["HIDDEN"]

_ALPHA = "xyz 12-\n<|>?"
_PAIRS = [([5, 1], [2, 2, 2, 3]), ([1, 2, 3, 4, 5, 6], [7]), ([4], [1]), ([8, 8, 8], [6, 5])]
_TEXT = "O Romeo, Romeo! wherefore art thou Romeo?\nDeny thy father and refuse thy name."

HIDDEN = {
    "ChatTokenizer": (
        Case("another alphabet: ids, render and encode", chat_case(
            _ALPHA, renders=(("12 xy?",), ("", ""), ("x", "y\n")),
            encodes=("<|user|>x-1<|assistant|>zz<|end|>", "<|assistant|><|user|>", "<|>|", "")),
             compare=chat_compare),
        Case("round trips of another alphabet", chat_case(_ALPHA, decodes=(
            "<|user|>12 xy?<|assistant|>y<|end|>", "<||>", "x<|end|>y<|end|>z")), compare=chat_compare),
    ),
    "sft_batch": (
        Case("four pairs, a one-token prompt and response among them, end_id=9", sft_case(_PAIRS, 9),
             compare=sft_compare),
        Case("four pairs, pad_id=3, end_id=12", sft_case(_PAIRS, 12, 3), compare=sft_compare),
        Case("the loss of four padded pairs vs each alone", sft_loss_case(_PAIRS, 9, 1211),
             compare=sft_loss_compare),
    ),
    "q_mask": (Q_MASK_LETTER,),
    "generate_response": (
        Case("another model: every end_id, a budget of 4", generate_case([7, 3], range(11), 4, seed=1221),
             compare=generate_compare),
        Case("a budget of 1", generate_case([2, 9, 2], [0, 5], 1, seed=1222), compare=generate_compare),
        Case("a prompt of 12 ids (the whole context), 5 more", generate_case(list(range(11)) + [3], [1, 6], 5,
                                                                            seed=1223), compare=generate_compare),
    ),
    "exact_match": (
        Case("exact_match on six more pairs", match_case([
            ("\tIAGO ", "Iago"), ("1987-03-03", "1987-03-04"), ("x", "x "), ("A  B\nC", "a b c"), ("ab", "abc"),
            ("", " ")]), compare=match_compare),
    ),
    "KGramIndex": (
        Case("KGramIndex(text, 6): membership and fractions", index_case(_TEXT, 6, queries=(
            "Romeo,", "Romeo!", "romeo,", "thy na", "name.", "O Rome", " name."), generated=(
            "Romeo, Romeo, Romeo", "Deny thy name", "short", "O Romeo! wherefore art thou")), compare=index_compare),
        Case("the index built once, k=8", sealed_case(_TEXT, 8, ("refuse thy father", "Deny thy father!")),
             compare=index_compare),
    ),
    "extraction_rate": (
        Case("extraction_rate p=5, s=4, another model", extraction_case(5, 4, 1232), compare=extraction_compare),
        Case("extraction_rate p=10, s=6 (past block_size 12)", extraction_case(10, 6, 1233),
             compare=extraction_compare),
    ),
    "q_heldout": (Q_HELDOUT_LETTER,),
    "deduplicate": (
        Case("deduplicate: two paragraphs repeated, min_chars=4", dedup_case(
            ["abcd", "xy", "abcd", "efgh", "xy", "efgh", "abcd "], 4), compare=dedup_compare),
        Case("deduplicate: empty paragraphs from three newlines", dedup_case(["ab", "", "\nab", "ab", ""], 1),
             compare=dedup_compare),
    ),
    "q_dedup": (Q_DEDUP_LETTER,),
}
