"""A notebook is five hand-written files plus a README row (DEVELOPERS.md, "Adding a notebook")."""

import pytest

from tests.conftest import NOTEBOOKS, ROOT


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebook_has_its_five_files_and_a_readme_row(name):
    topic = name.split("_", 1)[1]
    wanted = [f"autograder/masters/{name}.py", f"autograder/mutants/{name}.py",
              f"autograder/alternatives/{name}.py", f"lmcourse/reference/{topic}.py",
              f"tests/reference/test_{topic}.py"]
    missing = [w for w in wanted if not (ROOT / w).is_file()]
    assert not missing, f"{name} lacks {missing} (DEVELOPERS.md, 'Adding a notebook')"
    assert f"| `{name}`" in (ROOT / "README.md").read_text(), f"README.md has no row for {name}"
