"""lmcourse.reference.decoding: 07's references, 05's sampler and transformers' generation code."""

import lmcourse.decoding
import lmcourse.nn.gpt
from lmcourse.reference import decoding


def test_reference_includes_05s_sampler_and_names_transformers():
    assert set(lmcourse.decoding.REFERENCE) <= set(decoding.REFERENCE)
    assert lmcourse.nn.gpt.generate in decoding.REFERENCE
    assert "transformers.generation.utils" in decoding.MODULES and decoding.PACKAGES == ("transformers",)
