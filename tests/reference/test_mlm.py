"""lmcourse.reference.mlm names 06's answers."""

import lmcourse.nn.mlm
from lmcourse.reference.mlm import REFERENCE


def test_reference_names_the_masked_lm_answers():
    want = {lmcourse.nn.mlm.MaskedLM, lmcourse.nn.mlm.init_mlm_weights, lmcourse.nn.mlm.mask_tokens,
            lmcourse.nn.mlm.fill_mask, lmcourse.nn.mlm.pseudo_log_likelihood}
    assert want <= set(REFERENCE)
