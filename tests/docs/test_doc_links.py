"""Every link in README.md, config/README.md and docs/*.md resolves to a file of the
repository (and a `#section` to a heading of that file), and every repository path the docs
name in their text (docs/..., bench/..., tests/..., workflow_scripts/...) exists."""

from __future__ import annotations

import re

from conftest import ROOT

DOCS = [ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A path from the repository root named in the text, as the docs cite files.
PATH = re.compile(r"(?<![\w./-])((?:docs|bench|tests|workflow_scripts|config|rules|profiles|envs)"
                  r"/[\w./-]*\.(?:md|py|yaml|smk|sh|txt|rst))")
FENCE = re.compile(r"^(```|~~~)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path) -> set[str]:
    anchors, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


def _links(path) -> list[str]:
    """The markdown links outside code blocks."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out += LINK.findall(line)
    return out


def link_problems(path, root=ROOT) -> list[str]:
    """What is wrong with the links of one markdown file (none: an empty list)."""
    problems = []
    for target in _links(path):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        where = f"{path.relative_to(root)}: link ({target})"
        if not dest.is_file() or root not in dest.parents:
            problems.append(f"{where}: no file {dest} in the repository")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"{where}: {dest.relative_to(root)} has no heading #{anchor}")
    return problems


def test_every_link_resolves_to_a_file_and_heading():
    problems = [p for doc in DOCS for p in link_problems(doc)]
    assert not problems, "\n".join(problems)


def test_every_repository_path_the_docs_name_exists():
    missing = [f"{doc.relative_to(ROOT)}: {m.rstrip('.')}" for doc in DOCS
               for m in PATH.findall(doc.read_text(encoding="utf-8"))
               if not (ROOT / m.rstrip(".")).exists()]
    assert not missing, "docs name files the repository lacks:\n" + "\n".join(missing)


def test_the_link_check_fails_on_a_broken_link_or_anchor(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n")
    broken = tmp_path / "broken.md"
    broken.write_text("# Title\n\n[a](nowhere.md) [b](#title) [c](other.md#a-section)\n"
                      "[d](#no-such-heading) [e](https://example.org)\n\n```\n[f](x.md)\n```\n")
    problems = link_problems(broken, root=tmp_path)
    assert len(problems) == 2, problems
    assert "(nowhere.md): no file" in problems[0]
    assert "has no heading #no-such-heading" in problems[1]
