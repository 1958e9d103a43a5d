"""`make solutions` writes each executed notebook as an HTML page: it must read offline, formulas
included (typeset as MathML when the page is written, as on the feedback pages)."""

from __future__ import annotations

import re

import nbformat

from lmcourse.notebook_runner import write_html

FORMULA = r"The embedding table holds $|V| \cdot d$ numbers: $$P(w_t \mid w_{t-1}) = \frac{c}{n}$$"


def _page(tmp_path) -> str:
    code = nbformat.v4.new_code_cell("print(2 + 2)", execution_count=1,
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text="4\n")])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(FORMULA), code])
    return write_html(nb, tmp_path / "page.html").read_text(encoding="utf-8")


def test_an_executed_page_loads_nothing_from_the_web(tmp_path):
    page = _page(tmp_path)
    # every script the page has is inline: a src (web or local) would be a file it cannot open offline
    assert not re.findall(r"<script\b[^>]*\bsrc\s*=", page, re.I), re.findall(r"<script\b[^>]*>", page, re.I)
    assert not re.search(r"<script\b[^>]*>[^<]*\bimport\b[^<]*https?://", page, re.I)   # no CDN module either
    assert "mathjax" not in page.lower()


def test_its_formulas_are_mathml_not_raw_tex(tmp_path):
    page = _page(tmp_path)
    text = re.sub(r"<math\b.*?</math>", "", page, flags=re.S)
    assert page.count("<math") == 2, page.count("<math")
    assert r"\cdot" not in text and r"\frac" not in text        # nothing left for a script to typeset
    assert "4" in re.sub(r"<[^>]+>", "", page)                  # the output is still there
