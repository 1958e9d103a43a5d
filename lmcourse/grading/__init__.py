"""The TA's side: a class's submissions in, grades and feedback out (ingest -> prepare ->
sandbox -> grade; the verdicts from the kernel's records, :mod:`lmcourse.marking.grader`), and
nbgrader's command line.
The course author's tools (build, mutants, a throw-away course) are :mod:`lmcourse.authoring`."""
