"""The student's feedback page: nbgrader's feedback template, rendered in-process, with the
hidden tests taken out and then checked absent (a page that still quotes one is withheld).

The page is self-contained, it loads nothing: its CSS is inlined, its formulas are MathML written
here (:mod:`.maths`; nbconvert's pages load MathJax from a CDN), a web image in markdown (the
notebooks' Open in Colab / Kaggle badges) is shown as its alt text, and any other address the page
would load (raw HTML in a student's answer or output) is disabled."""

from __future__ import annotations

import html
import json
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from .maths import MathMLRenderer
from .prepare import strip_injected
from .template import test_label

if TYPE_CHECKING:
    from .result import Result
    from .template import Template

_local = threading.local()
# our layer over nbgrader's feedback template: a `mathjax` macro that loads nothing
TEMPLATES = Path(__file__).resolve().parent / "templates"
_IMG_NO_ALT = re.compile(r"<img(?![^>]*\balt=)", re.IGNORECASE)
_WEB = r"\s*(?:[a-z][\w+.-]*:)?//"      # http://, https://, //host
_REMOTE = re.compile(_WEB, re.IGNORECASE)
_TAG = re.compile(r"<([a-z][\w-]*)\b[^>]*>", re.IGNORECASE)
# an attribute that makes the browser fetch its address (a link's href waits for a click)
_LOADING = re.compile(rf"""(\s)(src|srcset|poster|data|background|href|xlink:href)(\s*=\s*["']?)(?={_WEB})""",
                      re.IGNORECASE)


class _PageRenderer(MathMLRenderer):
    """The page's markdown: formulas as MathML, a web image as its alt text."""

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return text if _REMOTE.match(url) else super().image(text, url, title)


def offline(page: str) -> str:
    """``page`` with every address it would load from elsewhere disabled (the attribute renamed
    ``data-offline-*``): raw HTML in a student's markdown or in an output can hold one."""
    def tag(m: re.Match) -> str:
        return m.group(0) if m.group(1).lower() == "a" else _LOADING.sub(r"\1data-offline-\2\3", m.group(0))
    return _TAG.sub(tag, page)


def as_released(nb, tpl: Template) -> None:
    """In place: no injected cells, test cells shown as released (hidden tests removed), test
    tracebacks reduced to their last line (a traceback quotes the failing hidden line)."""
    strip_injected(nb)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            cell.source = tpl.release_source.get(meta["grade_id"], "")
            for o in cell.get("outputs", []):
                if o.get("output_type") == "error":
                    o["traceback"] = [f"{o.get('ename', 'Error')}: {o.get('evalue', '')}"]


def leaks(text: str, hidden: list[str]) -> list[str]:
    """The hidden-test lines that appear verbatim in the page ``text`` (HTML entities decoded)."""
    plain = html.unescape(text)
    return [line for line in hidden if line in plain]


def _exporter_class():
    from jinja2 import pass_context
    from nbconvert.exporters import HTMLExporter, TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.markdown_mistune import MarkdownWithMath
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class FeedbackExporter(HTMLExporter):
        """nbconvert's HTMLExporter minus its BeautifulSoup pass over the finished page (which
        only adds ``alt`` to images and ``tabindex`` to cells, and was most of the render time);
        ``alt`` is added here by a regular expression. Markdown's formulas become MathML."""

        @pass_context
        def markdown2html(self, context, source):
            cell = context.get("cell", {})
            return MarkdownWithMath(renderer=_PageRenderer(
                escape=False, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
                path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
                **self.lexer_options)).render(source)

        def from_notebook_node(self, nb, resources=None, **kw):
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            self.register_filter("highlight_code", self.filters.get(
                "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
            resources = self._init_resources(resources)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            text, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return offline(_IMG_NO_ALT.sub('<img alt="No description has been provided for this image"',
                                           text)), resources

    return FeedbackExporter


def executed_page_exporter():
    """An exporter for an executed notebook's page (``make solutions``): nbconvert's lab page with
    the formulas as MathML and nothing loaded from elsewhere, like the feedback pages."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from traitlets.config import Config

    c = Config()
    c.HTMLExporter.template_name = "executed"           # templates/executed: the lab page, offline
    c.HTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    c.HTMLExporter.extra_template_paths = [str(TEMPLATES)]   # for feedback/mathjax.html.j2's style
    exp = _exporter_class()(config=c)
    exp.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
    return exp


def _exporter():
    """nbgrader's feedback page (its template), rendered in-process; one exporter per thread."""
    if getattr(_local, "exporter", None) is None:
        import nbgrader
        from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
        from traitlets.config import Config

        base = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
        c = Config()
        c.HTMLExporter.template_name = "feedback"
        c.HTMLExporter.extra_template_basedirs = [str(TEMPLATES), str(base / "templates")]
        c.HTMLExporter.extra_template_paths = [str(base / "static" / "node_modules" / "bootstrap" /
                                                   "dist" / "css")]
        exp = _exporter_class()(config=c)
        exp.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
        _local.exporter = exp
    return _local.exporter


def _named(text: str, tpl: Template, res: Result) -> str:
    """nbgrader's page with our score line (``19/21 auto, +2 by hand``, as the grading table says
    it) and each "Test cell" of its contents named by its exercise and grade id."""
    text = re.sub(r"(<h4>[^<]*?)\(Score: [^)]*\)</h4>",
                  lambda m: f"{m.group(1)}(Score: {html.escape(res.score_text())})</h4>", text, count=1)

    def name(m: re.Match) -> str:
        gid = html.unescape(m.group(1))
        label = test_label(tpl.exercise_of, gid)
        return f'<a href="#{m.group(1)}">{html.escape(label)} (<code>{m.group(1)}</code>)</a>'

    return re.sub(r'<a href="#([^"]+)">Test cell</a>', name, text)


def ungraded(text: str, waiting: dict[str, float]) -> str:
    """nbgrader's page with each hand-graded answer that has no score yet (``waiting``: grade id ->
    points) said to be waiting for a person, where nbgrader's template prints a score of 0: in the
    contents list and in the answer's own heading."""
    for gid, points in waiting.items():
        anchor = re.escape(html.escape(gid))
        text = re.sub(rf'(<a href="#{anchor}">[^<]*</a>) \(Score: [^)]*\)',
                      lambda m, pts=points: f"{m.group(1)} (not graded yet: {pts:g} points, graded by hand)", text)
        text = re.sub(rf'(<a name="{anchor}"></a>.*?)Score: [\d.]+ / [\d.]+',
                      lambda m, pts=points: f"{m.group(1)}Not graded yet ({pts:g} points, graded by hand)",
                      text, count=1, flags=re.S)
    return text


def sentence(text: str) -> str:
    """``text`` as a sentence of its own: a capital first letter, one closing mark."""
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")


def write_status_page(tpl: Template, out: Path, res: Result) -> None:
    """A short page for a submission that was not run (``wrong-assignment``): its score and why,
    in plain HTML with nothing to load."""
    what = html.escape(sentence(res.detail or res.status))
    page = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\" /><title>{html.escape(tpl.assignment)}"
            f"</title></head>\n<body>\n<h4>{html.escape(tpl.assignment)} (Score: {html.escape(res.score_text())})"
            f"</h4>\n<p><b>Not graded: {html.escape(res.status)}</b>. {what}</p>\n<p>Hand in "
            f"<code>{html.escape(tpl.assignment)}.ipynb</code>, the notebook of this assignment you worked in.</p>"
            "\n</body></html>\n")
    dest = out / "feedback" / f"{res.student}.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(page, encoding="utf-8")
    res.feedback = str(dest.relative_to(out))


def write_feedback(nb, tpl: Template, out: Path, res: Result) -> None:
    """``out/feedback/<student>.html`` for the executed notebook ``nb`` with ``res``'s scores,
    and its path in ``res.feedback``; or, when the page would quote a hidden test, no page and
    the flag ``feedback-withheld``."""
    fb = nbformat.from_dict(json.loads(json.dumps(nb)))
    as_released(fb, tpl)
    waiting = {}   # hand-graded answers no person has scored yet
    for cell in fb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["score"] = res.tests.get(meta["grade_id"])
            meta["points"] = tpl.points.get(meta["grade_id"], 0.0)
            if meta["score"] is None and (meta.get("solution") or meta.get("task")):
                waiting[meta["grade_id"]] = meta["points"]
        if meta.get("solution") or meta.get("task"):
            meta["comment"] = None
    resources = {"nbgrader": {"notebook": tpl.assignment, "assignment": tpl.assignment,
                              "student": res.student, "score": res.score, "max_score": res.max_score,
                              "late_penalty": 0}}
    text, _ = _exporter().from_notebook_node(fb, resources=resources)
    text = ungraded(_named(text, tpl, res), waiting)
    if leaks(text, tpl.hidden_lines()):
        res.flags.append("feedback-withheld")   # never hand out hidden tests
        return
    dest = out / "feedback" / f"{res.student}.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    res.feedback = str(dest.relative_to(out))
