"""The code stubs of the student notebooks: nbgrader's ``ClearSolutions`` with a message that names
the exercise. Used by ``autograder/nbgrader_config.py`` (so by every ``generate_assignment``:
``lmcourse build``, ``lmcourse grade``, the grading proofs); a module of its own so the config
stays configuration and the class can be imported and tested."""

from __future__ import annotations

import re

from nbgrader.preprocessors import ClearSolutions

__all__ = ["NamedStubs"]


class NamedStubs(ClearSolutions):
    """ClearSolutions whose code stubs say which exercise to do and what to write, e.g.
    ``raise NotImplementedError("Exercise 2: write count_ngrams here, then run the test cell below")``.

    The exercise is the last ``### Exercise N`` heading above the answer cell; the name is the
    ``def`` / ``class`` around the solution region (``MLP.__init__``), or ``answer_<id>`` for a
    multiple-choice cell. Every ``generate_assignment`` (``lmcourse build``, ``lmcourse grade``,
    the grading proofs) runs this file, so the grader's release has the same stubs as
    ``notebooks/``. A region with no exercise heading above it keeps a plain message, which
    ``lmcourse build`` refuses (it names the cell)."""

    heading_re = re.compile(r"^#{1,6}\s+(Exercise\s+\d+[a-z]?)\b", re.M)
    def_re = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")

    def preprocess(self, nb, resources):
        exercise = None
        self._exercise_of = {}
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                found = self.heading_re.findall(cell.source)
                if found:
                    exercise = " ".join(found[-1].split())
            self._exercise_of[index] = exercise
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        self._cell_exercise = self._exercise_of.get(cell_index)
        self._cell_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        return super().preprocess_cell(cell, resources, cell_index)

    def _stub(self, before, indent):
        """The stub for a solution region whose marker is indented by ``indent``, after ``before``."""
        names, width = [], len(indent)
        for line in reversed(before):
            m = self.def_re.match(line)
            if m and len(m.group(1)) < width:
                names.append(m.group(2))
                width = len(m.group(1))
                if not width:
                    break
        if names:
            what = f"write {'.'.join(reversed(names))} here"
        elif self._cell_id.startswith("q"):
            var = f"answer_{self._cell_id}"
            return ["# YOUR CODE HERE",
                    f"raise NotImplementedError(\"set {var} to your answer's letter here, "
                    "then run the test cell below\")"]
        else:
            what = "write your code here"
        label = f"{self._cell_exercise}: " if self._cell_exercise else ""
        return ["# YOUR CODE HERE",
                f"raise NotImplementedError(\"{label}{what}, then run the test cell below\")"]

    def _replace_solution_region(self, cell, language):
        if cell.cell_type != "code":
            return super()._replace_solution_region(cell, language)
        lines = cell.source.split("\n")
        new_lines, in_solution, replaced = [], False, False
        for line in lines:
            if self.begin_solution_delimeter in line:
                if in_solution:
                    raise RuntimeError("encountered nested begin solution statements")
                in_solution = replaced = True
                indent = re.match(r"\s*", line).group(0)
                new_lines += [indent + s for s in self._stub(new_lines, indent)]
            elif self.end_solution_delimeter in line:
                in_solution = False
            elif not in_solution:
                new_lines.append(line)
        if in_solution:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(new_lines)
        return replaced
