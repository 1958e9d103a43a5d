"""lmcourse.reference.gpt: 05's references include other notebooks' code that does its work
(issue 22 item 16: 07's generation loops, 06's initialisation)."""

import lmcourse.decoding
import lmcourse.nn.gpt
import lmcourse.nn.mlm
from lmcourse.reference.gpt import REFERENCE


def test_reference_closes_the_other_course_modules():
    assert set(lmcourse.nn.gpt.REFERENCE) <= set(REFERENCE)
    assert {lmcourse.decoding.generate, lmcourse.decoding.generate_cached, lmcourse.nn.mlm.init_mlm_weights} \
        <= set(REFERENCE)
    assert lmcourse.decoding.top_k_filter not in REFERENCE      # a filter is no sampling loop
