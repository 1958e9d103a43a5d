"""Each notebook's reference code, one module per notebook, named after the notebook's topic
(``reference/gpt.py`` for ``05_gpt``).

A module's ``REFERENCE`` tuple names every course function or class that does one of the
notebook's exercises, whichever module it lives in (05's holds ``lmcourse.decoding.generate``
and ``lmcourse.nn.mlm.init_mlm_weights`` too: another notebook's answer is a back door into
this one). A test cell states its rules with it, ``rules(*REFERENCE, reason=...)``
(:mod:`lmcourse.marking.rules`), so a graded answer that runs any of it is refused.
"""
