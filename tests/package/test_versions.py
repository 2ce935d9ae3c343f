"""The version, the CHANGELOG's sections and the upgrade notes tell one story.

The installed version is a release or the development version of the next one (``0.2.0.dev0``):
then the CHANGELOG's first section is ``[Unreleased]`` and says which release it becomes, no
dated section is that release yet, and every note "Upgrading from ..." (CHANGELOG and docs)
names a release the CHANGELOG dates, or a development version of the coming one.
"""

from __future__ import annotations

import re

from packaging.version import Version

import lsiorm
from support.paths import DOCS, REPO

CHANGELOG = (REPO / "CHANGELOG.md").read_text()
SECTION = re.compile(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?", re.M)
UPGRADE = re.compile(r"^#+ Upgrading from (.+?)(?::.*)?$", re.M)


def released() -> dict[str, str]:
    return {name: date for name, date in SECTION.findall(CHANGELOG) if name != "Unreleased"}


def test_the_installed_version_is_the_projects() -> None:
    declared = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert declared is not None
    assert lsiorm.__version__ == declared.group(1)


def test_the_changelog_sections_agree_with_the_version() -> None:
    version = Version(lsiorm.__version__)
    names = [name for name, _ in SECTION.findall(CHANGELOG)]
    assert all(released().values()), "every released section has a date"
    assert all(Version(name) < Version(version.base_version) for name in released())
    if version.is_devrelease:
        assert names[0] == "Unreleased"
        assert version.base_version not in released()
        unreleased = CHANGELOG.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
        assert f"released as {version.base_version}" in unreleased
    else:
        assert str(version) in released()


def test_every_upgrade_note_names_a_release_or_a_development_version_of_the_next() -> None:
    version = Version(lsiorm.__version__)
    coming = f"{version.major}.{version.minor}"
    notes = [
        (path.name, title)
        for path in sorted(DOCS.glob("*.md"))
        for title in UPGRADE.findall(path.read_text())
    ]
    notes += [("CHANGELOG.md", title) for title in UPGRADE.findall(CHANGELOG)]
    assert notes
    for where, title in notes:
        development = re.fullmatch(r"a (\d+\.\d+) development version", title)
        if development is not None:
            assert version.is_devrelease, (where, title)
            assert development.group(1) == coming, (where, title)
        else:
            assert title in released(), f"{where}: 'Upgrading from {title}' is no release"
