# The student's lab (`lmcourse lab`, `make lab`): nbgrader only validates here, with its defaults.
# This file exists so that nbgrader finds a config and does not warn "No nbgrader_config.py file
# found" on every Validate. The course's own nbgrader config (for TAs) is autograder/nbgrader_config.py.
from lmcourse.labconfig.validate import explain, start

c = get_config()  # noqa: F821

# Validate's first lines: how many tests fail and in which exercises; an unanswered question says
# which one to answer (nbclient's per-cell hook, on Validate's own copy of the notebook, never saved)
c.Execute.on_cell_start = start
c.Execute.on_cell_error = explain
