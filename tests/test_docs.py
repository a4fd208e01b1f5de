"""The documentation holds together: every relative link in README.md and docs/
points to a file that exists (and to a heading that exists, where it names one),
and README.md stays a guide, short enough to read (the reference is in docs/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
README_MAX_LINES = 200
FENCE = re.compile(r"^```.*?^```", flags=re.DOTALL | re.MULTILINE)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")  # [text](target) and ![alt](image)


def _prose(page: Path) -> str:
    """The page without its code blocks (code may hold `](` of its own)."""
    return FENCE.sub("", page.read_text())


def _anchor(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {
        _anchor(line.lstrip("#"))
        for line in _prose(page).splitlines()
        if re.match(r"#{1,6} ", line)
    }


def _links(page: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(page)) if not re.match(r"[a-z]+:", t)]


def test_the_pages_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/search.md", "docs/figures.md", "docs/many-workers.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no such heading in {file.name}")
    assert broken == []


def test_the_anchor_rule_matches_github() -> None:
    assert _anchor(" Experiment tracking: `--mlflow`") == "experiment-tracking---mlflow"
    assert _anchor("Lane-parallel training") == "lane-parallel-training"


def test_the_readme_is_a_guide_not_a_manual() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move reference text to docs/"


def test_the_readme_names_every_extra() -> None:
    """Every optional extra of pyproject.toml (but ``all`` and ``dev``) is in the
    README's extras paragraph, with what needs it."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    text = (ROOT / "README.md").read_text()
    paragraph = text[text.index("Extras (") : text.index("a command that needs a missing one")]
    missing = [
        name for name in extras if name not in ("all", "dev") and f"`{name}`" not in paragraph
    ]
    assert missing == []
