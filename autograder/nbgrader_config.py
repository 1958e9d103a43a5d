# nbgrader configuration for the lmcourse course root (this folder).
# `lmcourse build` and `lmcourse grade` pass --CourseDirectory.root explicitly, so the same
# file works from a temporary copy of the course.
import os

from nbgrader.converters import Autograde, GenerateAssignment
from nbgrader.preprocessors import ClearSolutions, Execute

# the stubs that name the exercise ("Exercise 2: write count_ngrams here, ..."): in the package, so a
# change to them rebuilds the grader's release too (lmcourse.grading.template fingerprints both)
from lmcourse.authoring.stubs import NamedStubs

# every kernel runs in the sandbox `lmcourse grade` uses (the same allowlisted world, limits and runner)
from lmcourse.grading.nbgrader_execute import ForeignMetadata, SandboxedExecute

# the verdict of a notebook graded from records, made here after the kernel ran, not in the kernel
from lmcourse.marking.grader import JudgeRecords

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "lmcourse"
# Student notebooks are named like the assignment: 01_ngram/01_ngram.ipynb
c.CourseDirectory.notebook_id = "*"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.ClearSolutions.enforce_metadata = True

c.GenerateAssignment.preprocessors = [
    NamedStubs if p is ClearSolutions else p
    for p in GenerateAssignment.class_traits()["preprocessors"].default()]

# SandboxedExecute: nbgrader's Execute, but the kernel runs in the course's sandbox (it refuses to grade
# without bubblewrap unless LMCOURSE_SANDBOX=none); its runner also keeps a test's record where its own
# cell wrote it. JudgeRecords: the verdict, in this process, from what the kernel recorded.
c.Autograde.autograde_preprocessors = [
    p for q in Autograde.class_traits()["autograde_preprocessors"].default()
    for p in ([SandboxedExecute, JudgeRecords] if q is Execute else [q])]

# Generous per-cell limit; notebooks run in the `tiny` profile under autograding
# (nbgrader sets NBGRADER_EXECUTION), so a healthy notebook needs seconds.
c.ExecutePreprocessor.timeout = 120
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True

# ForeignMetadata first: nbgrader metadata a student gave a cell of their own, which nbgrader cannot read, would
# stop the whole class's autograde at that notebook; it is moved aside (and the source scan flags the cell)
c.Autograde.sanitize_preprocessors = [ForeignMetadata,
                                      *Autograde.class_traits()["sanitize_preprocessors"].default()]
