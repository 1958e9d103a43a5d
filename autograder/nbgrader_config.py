# nbgrader configuration for the lmcourse course root (this folder).
# `lmcourse build` and `lmcourse grade` pass --CourseDirectory.root explicitly, so the same
# file works from a temporary copy of the course.
import os

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "lmcourse"
# Student notebooks are named like the assignment: 01_ngram/01_ngram.ipynb
c.CourseDirectory.notebook_id = "*"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.ClearSolutions.enforce_metadata = True

# Generous per-cell limit; notebooks run in the `tiny` profile under autograding
# (nbgrader sets NBGRADER_EXECUTION), so a healthy notebook needs seconds.
c.ExecutePreprocessor.timeout = 120
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True
