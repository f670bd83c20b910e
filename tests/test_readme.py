"""The README names what ``make test`` needs of the machine: every Debian package the
Makefile installs, and the privileges the autograder's tests use."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_the_makefile_installs_is_named_in_the_readme():
    makefile = (ROOT / "Makefile").read_text()
    readme = (ROOT / "README.md").read_text()
    packages = {p for line in re.findall(r"apt-get install ([^\n>]*)", makefile)
                for p in line.split() if not p.startswith("-")}
    assert packages >= {"chromium", "bubblewrap"}, packages
    missing = {p for p in packages if f"`{p}`" not in readme}
    assert not missing, f"README.md does not name the Debian packages {sorted(missing)}"
    for needed in ("cgroup", "`sudo`", "user namespaces", "`git`"):
        assert needed in readme, needed
