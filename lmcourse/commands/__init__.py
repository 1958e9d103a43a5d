"""What runs on the machine rather than in a notebook: the ``lmcourse`` command and the set-up.

- :mod:`~lmcourse.commands.main`: the ``lmcourse`` entry point (build, doctor, lab, solutions,
  release, grade, and the hand-offs below);
- :mod:`~lmcourse.commands.doctor`: ``lmcourse doctor``;
- :mod:`~lmcourse.commands.train`: ``lmcourse train``, the notebooks' recipes at full size from a
  terminal (the training loop itself is :mod:`lmcourse.train`), one driver over the models of
  :mod:`~lmcourse.commands.tasks`, a module each;
- :mod:`~lmcourse.commands.links`: where the course lives on the web (``lmcourse links``, and what
  the build writes into each notebook);
- :mod:`~lmcourse.commands.paths`: where the course repository is, for the commands that work on
  a clone (build, lab, release, grade, the benchmarks);
- :mod:`~lmcourse.commands.setup_torch`: installs PyTorch before the package is installed
  (``make setup``, a notebook's first cell on Colab or Kaggle).

Installation lives here with the commands, not in a folder of its own: its three modules serve the
same reader as the commands (whoever sets up or runs the course on a machine), each is driven by
a command or by ``make setup``, and none is imported by a notebook's library code or a test cell.

This file imports nothing: ``setup_torch.py`` runs as a script before torch or the package's
dependencies exist, and ``lmcourse.commands.paths`` is read by grading and authoring code that
must not pull in the command line.
"""
