"""`lmcourse grade --help` names every grading command, those with parsers of their own included."""

from __future__ import annotations

import pytest

from lmcourse.commands.main import main


def test_grade_help_lists_its_subcommands_and_each_one_answers_help(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["grade", "--help"])
    shown = capsys.readouterr().out
    assert stop.value.code == 0
    for name in ("export", "merge", "gradescope", "similarity"):
        assert f"lmcourse grade {name} " in shown, (name, shown)
        with pytest.raises(SystemExit) as sub:          # the line sends people to a help that exists
            main(["grade", name, "--help"])
        assert sub.value.code == 0 and capsys.readouterr().out.startswith("usage:")
    assert "--self-test" in shown and "--try NOTEBOOK" in shown
