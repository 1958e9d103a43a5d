"""The course author's tools, run on a clone of the course repository (never in a student's
kernel, never by the TA's grader):

- ``build``: masters (``autograder/masters/NN_name.py``) -> nbgrader source notebooks, student
  notebooks, solutions (``lmcourse build``);
- ``mutants``: test strength both ways, typical bugs that must lose points and valid
  alternatives that must keep them (``tests/notebooks/test_mutants.py``, ``tests/notebooks/test_alternatives.py``);
- ``course``: a throw-away nbgrader course that generates, submits and autogrades for real
  (the grading proofs, ``bench/bench_grade.py``).

The TA's pipeline (ingest -> prepare -> sandbox -> grade) is :mod:`lmcourse.grading`; running
notebooks headlessly is :mod:`lmcourse.notebook_runner`.
"""
