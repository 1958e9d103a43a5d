"""The TA's side: build the notebooks, run nbgrader, grade a class."""
