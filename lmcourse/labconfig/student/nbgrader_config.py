# The student's lab (`lmcourse lab`, `make lab`): nbgrader only validates here, with its defaults.
# This file exists so that nbgrader finds a config and does not warn "No nbgrader_config.py file
# found" on every Validate. The course's own nbgrader config (for TAs) is autograder/nbgrader_config.py.
c = get_config()  # noqa: F821
