"""Formulas typeset when a feedback page is written, so the page needs no script and no network.

nbconvert leaves a notebook's LaTeX (``$…$``, ``$$…$$``, ``\\begin{env}…\\end{env}``) as text for
MathJax, which its pages load from a CDN: offline, or in an LMS preview that runs no scripts, a
student reads the TeX source. Here each formula becomes MathML (by latex2mathml), which browsers
draw themselves. A formula latex2mathml cannot read is shown as its source, in ``<code>``.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from xml.etree.ElementTree import Element, tostring

from latex2mathml.converter import convert_to_element
from nbconvert.filters.markdown_mistune import IPythonRenderer

# what latex2mathml lacks, written as what it has that looks the same: `aligned` lays its rows out
# as `split` does; `\arg` is an operator name like `\max` (it would show as the text "\arg")
_ALIASES = {r"\begin{aligned}": r"\begin{split}", r"\end{aligned}": r"\end{split}",
            r"\arg": r"\operatorname{arg}"}
_ALIAS = re.compile("|".join(re.escape(a) + "(?![A-Za-z])" for a in _ALIASES))
# latex2mathml writes symbols as character references into the text (and unescapes its whole
# output, which would turn a `<` of `\text{<s>}` into a tag): decode just those, then escape all
_CHAR_REF = re.compile(r"&#x([0-9A-Fa-f]+);")
_COMMAND = re.compile(r"\\(?:[A-Za-z]+|.)")
# TeX's escaped characters, which latex2mathml unescapes in maths but leaves as typed in \text{}
_TEXT_ESCAPE = re.compile(r"\\([_%$&#{}])")
_SCRIPTED = {"msub", "msup", "msubsup", "munder", "mover", "munderover"}
_FIXED_ARITY = _SCRIPTED | {"mfrac", "mroot"}   # their children are parts, not a row
# symbols TeX treats as ordinary that latex2mathml writes as operators, spaced like `+` (`- ∞`)
_ORDINARY = {"∞", "∅"}


class UnreadableTeX(ValueError):
    """latex2mathml could not read a formula."""


def _decoded(text: str | None) -> str | None:
    return text and _CHAR_REF.sub(lambda m: chr(int(m.group(1), 16)), text)


def mathml_element(tex: str, display: bool) -> Element:
    """The ``<math>`` element for ``tex`` (display or inline), its text as plain characters."""
    src = _ALIAS.sub(lambda m: _ALIASES[m.group(0)], tex)
    try:
        root = convert_to_element(src, display="block" if display else "inline")
    except Exception as e:  # latex2mathml's errors share no base class
        raise UnreadableTeX(f"cannot typeset {tex!r}: {type(e).__name__} {e}".rstrip()) from e
    for el in root.iter():
        el.text, el.tail = _decoded(el.text), _decoded(el.tail)
        if el.tag == "mtext" and el.text:
            el.text = _TEXT_ESCAPE.sub(r"\1", el.text)
        for key, value in el.attrib.items():
            el.attrib[key] = _decoded(value)
    _tex_spacing(root)
    return root


def _is_name(el: Element) -> bool:
    """A function's name (``\\log``, ``\\operatorname{softmax}``), alone or with scripts (``\\max_w``)."""
    if el.tag in _SCRIPTED and len(el):
        el = el[0]
    return el.tag == "mi" and len(el.text or "") > 1 and el.text.isalpha()


def _tex_spacing(root: Element) -> None:
    """TeX's thin space between a function's name and its argument (``log p``, not ``logp``),
    which MathML leaves to a renderer and browsers do not add; latex2mathml writes
    ``\\operatorname`` names (and ``\\infty``) as operators, spaced like ``+``, so they become
    identifiers first."""
    for el in root.iter("mo"):
        if not el.attrib and (el.text in _ORDINARY or len(el.text or "") > 1 and el.text.isalpha()):
            el.tag = "mi"
    for parent in list(root.iter()):
        kids = list(parent)
        if parent.tag in _FIXED_ARITY or len(kids) < 2:
            continue
        row = kids[:1]
        for a, b in zip(kids, kids[1:]):
            if (_is_name(a) or _is_name(b)) and not {a.tag, b.tag} & {"mo", "mspace"}:
                row.append(Element("mspace", {"width": "0.167em"}))
            row.append(b)
        parent[:] = row


def unknown_commands(root: Element) -> list[str]:
    """The TeX that latex2mathml did not know, which it leaves in the output as text (``\\foo``)."""
    return [cmd for el in root.iter() for cmd in _COMMAND.findall(el.text or "")]


@lru_cache(maxsize=4096)   # a class's pages share the notebook's formulas (about 1 ms each)
def tex_to_mathml(tex: str, display: bool) -> str:
    """MathML markup for ``tex``, or (when latex2mathml cannot read it) the source in ``<code>``."""
    try:
        return tostring(mathml_element(tex, display), encoding="unicode")
    except UnreadableTeX:
        fence = "$$" if display else "$"
        return f'<code class="tex-source">{html.escape(fence + tex + fence)}</code>'


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer with the formulas typeset as MathML."""

    def block_math(self, body: str) -> str:
        return tex_to_mathml(body, display=True)

    def inline_math(self, body: str) -> str:
        return tex_to_mathml(body, display=False)

    def latex_environment(self, name: str, body: str) -> str:
        return tex_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)

