"""What the student's Validate button says first: how many tests fail and which, and, for a
question not answered yet, which question to answer.

nbgrader's lab extension shows, for each failing test cell, "The following cell failed:", the
cell's whole source, then its error: twelve failures made 34,000 characters with no count, and an
unanswered question was a bare ``NameError: name 'answer_q1' is not defined``. The Validator's
steps and the dialog are fixed; what a config can shape is the executed copy of the notebook
(never saved). The student lab's ``nbgrader_config.py`` sets :func:`explain` as nbclient's
``on_cell_error`` hook of nbgrader's ``Execute`` (called after each failing cell, its outputs
in hand). It

- adds to an unanswered question's ``NameError`` the question and what to write;
- starts the first failing test's error with a count of the tests that stop with an error, their
  grade ids and the exercise each stub names, kept up to date as later tests fail (the dialog
  shows that test's source, then this line).

nbclient's whole-notebook hooks are not called by nbgrader's (synchronous) Execute, hence a
per-cell hook with its state here. Autograding never uses it: the TA's config is
``autograder/nbgrader_config.py``.
"""

from __future__ import annotations

import re

_UNANSWERED = re.compile(r"name '(answer_(\w+))' is not defined")
_EXERCISE = re.compile(r"\b(Exercise \d+[a-z]?)\b")
_run: dict = {"last": -1, "first": None, "failed": []}   # the validation under way


def _is_test(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution") and cell.get("cell_type") == "code"


def _hint_unanswered(output) -> None:
    m = _UNANSWERED.search(output.get("evalue", ""))
    if not m or output.get("ename") != "NameError":
        return
    var, qid = m.groups()
    # a placeholder, not a letter: any letter here would read as a suggestion of the answer
    hint = (f"Question {qid} is not answered yet: in its cell, set {var} to your answer's letter in "
            f'quotes ({var} = "<your letter>"), run that cell, then Validate again')
    output["evalue"] = f"{output['evalue']}. {hint}"
    output["traceback"] = [*output.get("traceback", []), f"NameError: {output['evalue']}"]


def start(cell=None, cell_index: int = 0, **_) -> None:
    """nbclient's ``on_cell_start`` hook: code cells start in order, so an index not above the
    last one means a new validation (of this or another notebook) began."""
    if cell_index <= _run["last"]:
        _run.update(first=None, failed=[])
    _run["last"] = cell_index


def explain(cell=None, cell_index: int = 0, **_) -> None:
    """nbclient's ``on_cell_error`` hook: see the module's docstring."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    for o in errors:
        _hint_unanswered(o)
    if not _is_test(cell) or not errors:
        return
    gid = cell["metadata"]["nbgrader"].get("grade_id", "?")
    said = _EXERCISE.search(" ".join(str(o.get("evalue", "")) for o in errors))
    _run["failed"].append(f"{gid} ({said.group(1)})" if said else gid)
    if _run["first"] is None:
        _run["first"] = errors[0]
        errors[0]["traceback"] = ["", *errors[0].get("traceback", [])]
    n = len(_run["failed"])
    _run["first"]["traceback"][0] = (f"{n} test{'s' if n != 1 else ''} stop{'' if n != 1 else 's'} with an error: "
                                     f"{', '.join(_run['failed'])}. This is the first; each is below, "
                                     "in the notebook's order.\n")
