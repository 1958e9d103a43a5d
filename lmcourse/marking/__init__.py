"""Grades decided outside the student's kernel: the kernel records, the grader judges.

* :mod:`.kernel` — :class:`Exam`, what a notebook's test cells call (``tests.check``, ``tests.grade``);
* :mod:`.plain` — what came back, as plain data (read by exact type, written as JSON);
* :mod:`.spec` — cases, exercises and notebooks as data; :mod:`.judge` — the verdict and its message;
* :mod:`.grader` — the grader's side: records read from a run notebook, judged, written as outputs;
* one module per notebook of its tests (``ngram`` for 01), its hidden cases beside it (``ngram_hidden``);
  :mod:`.notebooks` says which notebooks are graded this way.
"""

from .kernel import Exam

__all__ = ["Exam"]
