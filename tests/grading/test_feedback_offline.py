"""A feedback page is self-contained: its formulas are MathML written when the page is
(lmcourse/grading/maths.py), so it loads no MathJax, nothing at all, and reads right offline.

The page is the one `lmcourse grade` writes (``write_feedback``) for a solved notebook, its test
cells shown as the student release has them (notebooks/), checked for hidden-test lines as a
grade run checks it, plus a written answer and an output that hold what the notebook's own text
does not. The quick tests read its HTML and typeset every formula of every notebook; the browser
test opens it from ``file://`` in Chromium with every other request refused and looks at what a
student sees.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import jupytext
import nbformat
import pytest
from nbconvert.filters.markdown_mistune import MarkdownWithMath

from lmcourse.grading import maths
from lmcourse.grading.feedback import write_feedback
from lmcourse.grading.result import Result
from lmcourse.grading.template import exercises, hidden_test_lines
from tests.conftest import NOTEBOOKS, ROOT

PAGE_NOTEBOOK = "02_rnn"   # fractions, sums, subscripts, \mathrm, \text, \mathbb, an aligned block
# a student's written answer with what the notebooks' markdown does not show in this one
ANSWER = r"""Perplexity is $\mathrm{PPL} = \exp\big(-\frac{1}{N}\sum_{i=1}^{N} \log p(w_i \mid w_{<i})\big)$
over a vocabulary of $\lvert V \rvert$ types, and greedy decoding picks $\arg\max_w p(w)$;
$\operatorname{softmax}(z)_i = e^{z_i} / \sum_j e^{z_j}$ and $\texttt{<s>}$ starts a sentence:

$$\begin{align}
\mathcal{L} &= -\log p(x) \\
&\le \text{bits} \cdot \ln 2
\end{align}$$

[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/)
and a picture from the web: <img src="https://example.org/attention.png" alt="attention map">
"""
# an output a student's code could leave: HTML that would load from the web
OUTPUT = nbformat.v4.new_output("display_data", data={"text/html": (
    '<script src="https://cdn.example.org/widget.js"></script><img src="//example.org/plot.png">'
    '<svg><image xlink:href="http://example.org/a.svg" /></svg>'), "text/plain": "<HTML>"})


def _formulas(source: str) -> list[tuple[str, bool]]:
    """(TeX, display?) of each formula in a markdown cell, as the feedback renderer finds them."""
    found = []

    class Collect(maths.MathMLRenderer):
        def block_math(self, body):
            found.append((body, True))
            return ""

        def inline_math(self, body):
            found.append((body, False))
            return ""

        def latex_environment(self, name, body):
            found.append((rf"\begin{{{name}}}{body}\end{{{name}}}", True))
            return ""

    MarkdownWithMath(renderer=Collect(escape=False)).render(source)
    return found


def _feedback_page(out: Path) -> tuple[Path, int]:
    """The page `lmcourse grade` writes for the solved PAGE_NOTEBOOK plus ANSWER, and how many
    formulas its markdown holds."""
    source = nbformat.read(ROOT / "autograder" / "source" / PAGE_NOTEBOOK / f"{PAGE_NOTEBOOK}.ipynb",
                           as_version=4)
    nb = nbformat.from_dict(source)    # a submission with every answer right: the source's answer cells
    nb.cells.append(nbformat.v4.new_markdown_cell(ANSWER))
    nb.cells.append(nbformat.v4.new_code_cell("show()", outputs=[OUTPUT], execution_count=1))
    release = nbformat.read(ROOT / "notebooks" / f"{PAGE_NOTEBOOK}.ipynb", as_version=4)
    by_id = {c.metadata["nbgrader"]["grade_id"]: c.source for c in release.cells
             if c.metadata.get("nbgrader", {}).get("grade_id")}
    # what write_feedback reads of a Template, without running nbgrader's release (seconds)
    tpl = SimpleNamespace(assignment=PAGE_NOTEBOOK, release_source=by_id, points={},
                          exercise_of=exercises(source),
                          hidden_lines=lambda: hidden_test_lines(source))
    res = Result(student="student", assignment=PAGE_NOTEBOOK, status="graded", score=3, max_score=5, auto_max=5)
    write_feedback(nb, tpl, out, res)
    assert res.feedback and not res.flags, res
    count = sum(len(_formulas(c.source)) for c in nb.cells if c.cell_type == "markdown")
    return out / res.feedback, count


class _References(HTMLParser):
    """Every address the page would load: src/href-like attributes (not a link's href, which
    loads only when followed) and CSS url() and @import."""

    LOADING = {"src", "srcset", "data", "poster", "background", "xlink:href", "action", "formaction"}

    def __init__(self):
        super().__init__()
        self.found, self._css = [], False

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if value and (key in self.LOADING or (key == "href" and tag != "a")):
                self.found.append(f"<{tag} {key}={value[:80]}>")
        self._css = tag == "style"

    def handle_data(self, data):
        if self._css:
            self.found += [f"url({u[:80]})" for u in re.findall(r"url\(\s*['\"]?([^'\")]+)", data)]
            self.found += [f"@import {i[:80]}" for i in re.findall(r"@import\s+([^;]+)", data)]

    def handle_endtag(self, tag):
        self._css = False


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[Path, int]:
    return _feedback_page(tmp_path_factory.mktemp("feedback"))


def test_the_page_loads_nothing_and_its_formulas_are_mathml(page):
    path, count = page
    text = path.read_text(encoding="utf-8")
    refs = _References()
    refs.feed(text)
    # bootstrap's inlined CSS names its icon font beside itself; the page shows no icon, so
    # nothing loads it (the browser test sees no request)
    outside = [r for r in refs.found if not r.startswith("url(../fonts/glyphicons-halflings-regular.")
               and "data:" not in r]
    assert outside == [], f"the page loads from outside itself: {outside}"
    assert not re.search(r"<script\b[^>]*\ssrc=", text, re.I), "a script is loaded"
    assert "mathjax" not in re.sub(r"<!--.*?-->", "", text, flags=re.S).lower(), "MathJax is still set up"
    assert count > 50 and text.count("<math ") == count, (count, text.count("<math "))
    assert 'display="block"' in text and 'display="inline"' in text
    assert "$$" not in text and 'class="tex-source"' not in text, "a formula was left as TeX"
    # the badge is its alt text, still a link; the student's web image and script are disabled
    assert '<a href="https://colab.research.google.com/">Open In Colab</a>' in text
    assert 'data-offline-src="https://example.org/attention.png"' in text
    assert 'data-offline-src="https://cdn.example.org/widget.js"' in text


def test_every_formula_of_every_notebook_typesets():
    """latex2mathml reads each formula the notebooks' markdown writes, and knows each command in
    it (an unknown one would show as the text ``\\foo``): a new notebook or prose edit that uses
    one fails here, to be given an alias in lmcourse/grading/maths.py."""
    seen, problems = 0, []
    for name in NOTEBOOKS:
        nb = jupytext.read(ROOT / "autograder" / "masters" / f"{name}.py")
        for cell in nb.cells:
            for tex, display in _formulas(cell.source) if cell.cell_type == "markdown" else []:
                seen += 1
                try:
                    if unknown := maths.unknown_commands(maths.mathml_element(tex, display)):
                        problems.append(f"{name}: {unknown} in {tex!r}")
                except maths.UnreadableTeX as e:
                    problems.append(f"{name}: {e}")
    assert seen > 500 and problems == [], "\n".join(problems)


def test_text_in_a_formula_stays_text_and_an_unreadable_one_shows_its_source():
    got = maths.tex_to_mathml(r"\texttt{<s>} \text{a&b} < c", display=False)
    assert "&lt;s&gt;" in got and "a&amp;b" in got and "<s>" not in got, got
    assert "<mo>&lt;</mo>" in got and "&#x" not in got, got   # symbols as characters, escaped once
    assert "<mtext>tgt_out</mtext>" in maths.tex_to_mathml(r"\text{tgt\_out}", display=False)
    assert maths.tex_to_mathml("x^", display=True) == '<code class="tex-source">$$x^$$</code>'
    assert "mtable" in maths.tex_to_mathml(r"\begin{aligned} a &= b \\ c &= d \end{aligned}", display=True)


def test_a_function_name_is_spaced_from_its_argument_as_in_tex():
    """``log p`` and ``arg max_w p``, not ``logp``; a script's base keeps its two parts; ``−∞``."""
    got = maths.tex_to_mathml(r"-p\log_2 p + \arg\max_w q", display=False)
    thin = '<mspace width="0.167em" />'
    assert (f"<mi>p</mi>{thin}<msub><mi>log</mi><mn>2</mn></msub>{thin}<mi>p</mi>" in got
            and f"<mi>arg</mi>{thin}<msub><mi>max</mi><mi>w</mi></msub>{thin}<mi>q</mi>" in got), got
    assert maths.tex_to_mathml(r"\exp(x)", display=False).count("mspace") == 0   # no space before "("
    assert "<mo>−</mo><mi>∞</mi>" in maths.tex_to_mathml(r"-\infty", display=False)   # "−∞", not "− ∞"


@pytest.mark.slow               # a browser
@pytest.mark.xdist_group("browser")
def test_offline_in_chromium_the_formulas_are_drawn_and_nothing_is_requested(page, tmp_path):
    from tests.notebooks.test_browser import _chromium

    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed "
                                   "(pip install playwright; make test installs the dev extra)")
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium found (Debian/Ubuntu: apt-get install chromium; or LMCOURSE_CHROMIUM=/path)")
    path, count = page
    url = path.resolve().as_uri()
    requested = []

    def refuse_all_but_the_page(route):
        requested.append(route.request.url)
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            context = browser.new_context(offline=True)
            context.route("**/*", refuse_all_but_the_page)
            tab = context.new_page()
            tab.goto(url, wait_until="load", timeout=60_000)
            drawn = tab.evaluate("""() => [...document.querySelectorAll('math')].map(m => {
                const box = m.getBoundingClientRect();
                return {display: getComputedStyle(m).display, width: box.width, height: box.height,
                        fraction: m.getAttribute('display') === 'block' && !!m.querySelector('mfrac'),
                        fontSize: parseFloat(getComputedStyle(m).fontSize)};
            })""")
            seen = tab.evaluate("document.body.innerText")
        finally:
            browser.close()
    assert requested == [url], f"the page asked for more than itself: {requested}"
    assert len(drawn) == count
    # laid out as MathML ('math' / 'block math'), not as unknown inline elements, each with a size
    assert {d["display"] for d in drawn} == {"math", "block math"}, {d["display"] for d in drawn}
    assert all(d["width"] > 0 and d["height"] > 0 for d in drawn)
    # a displayed fraction stands on two lines: taller than one line of text
    assert any(d["fraction"] and d["height"] > 1.6 * d["fontSize"] for d in drawn)
    tex = re.findall(r"\$\$|\\(?:frac|sum|mathrm|text|begin|lvert|operatorname)\b", seen)
    assert tex == [], f"TeX source visible on the page: {tex[:5]}"
