"""The documentation's links and the code's section references resolve.

- Every relative Markdown link in README.md and docs/*.md names a file inside the repository, and
  its ``#anchor`` (if any) names a heading of that file.
- Every "spec N" / "spec N.N" reference (also "spec section N", and lists such as "spec 3.1, 3.2"
  or "spec 3 and 6") in the Python files under the code directories names a numbered section
  heading of docs/spec.md. The directories are walked recursively, so files moved into
  subpackages stay covered.

Pure Python: no Amaranth, no simulator.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "spec.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE_DIRS = ("rtl", "sim", "golden", "boards", "tests", "focus_rtl")

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SECTION = re.compile(r"^(\d+(?:\.\d+)*)\.?(?:\s|$)")
_NUMBER = r"\d+(?:\.\d+)*"
# "spec 3.3", "spec section 7", "spec sections 2 to 4 and 6", "spec 3.1, 3.2", "spec 4.2, 6".
_REFERENCE = re.compile(rf"\bspec\s+(?:sections?\s+)?({_NUMBER}(?:(?:\s*,\s*|\s+and\s+|\s+to\s+)"
                        rf"{_NUMBER})*)", re.IGNORECASE)


def _prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def _slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path):
    seen, anchors = {}, set()
    for _, line in _prose_lines(path):
        match = _HEADING.match(line)
        if match:
            slug = _slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(path):
    """(line number, target) of every Markdown link and image outside code (fenced or inline)."""
    for number, line in _prose_lines(path):
        for match in _LINK.finditer(line):
            if line[:match.start()].count("`") % 2:
                continue                    # inside an inline code span
            yield number, match.group(1)


def _relative(target):
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith("//")


def _section_numbers():
    numbers = []
    for _, line in _prose_lines(SPEC):
        match = _HEADING.match(line)
        if match:
            section = _SECTION.match(match.group(2))
            if section:
                numbers.append(section.group(1))
    return numbers


def _python_files():
    for name in CODE_DIRS:
        directory = ROOT / name
        if directory.is_dir():
            yield from sorted(p for p in directory.rglob("*.py") if "__pycache__" not in p.parts)


def _references(text):
    """The section numbers cited in ``text``: each list item, and both ends of "N to M"."""
    for match in _REFERENCE.finditer(text):
        yield from re.findall(_NUMBER, match.group(1))


def test_docs_exist():
    assert SPEC.is_file(), "docs/spec.md is missing"
    assert (ROOT / "docs" / "README.md").is_file(), "docs/README.md is missing"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    problems = []
    for number, target in _links(doc):
        if not _relative(target):
            continue
        path_part, _, anchor = target.partition("#")
        where = f"{doc.relative_to(ROOT)}:{number}: {target}"
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if ROOT not in (dest, *dest.parents):
            problems.append(f"{where}: points outside the repository")
            continue
        if not dest.exists():
            problems.append(f"{where}: {path_part} does not exist")
            continue
        if anchor and dest.suffix == ".md" and dest.is_file():
            if anchor.lower() not in _anchors(dest):
                problems.append(f"{where}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_spec_section_numbers_are_unique():
    numbers = _section_numbers()
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    assert not duplicates, f"docs/spec.md numbers these sections twice: {duplicates}"
    for top in map(str, range(8)):
        assert top in numbers, f"docs/spec.md has no section {top}"


def test_spec_register_markers():
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    for marker in ("<!-- registers:begin -->", "<!-- registers:end -->"):
        assert lines.count(marker) == 1, f"docs/spec.md needs exactly one line {marker!r}"
    begin = lines.index("<!-- registers:begin -->")
    end = lines.index("<!-- registers:end -->")
    assert begin < end, "the register markers are in the wrong order"


def test_code_references_name_spec_sections():
    sections = set(_section_numbers())
    files = list(_python_files())
    assert files, "no Python files found under " + ", ".join(CODE_DIRS)
    missing, found = [], 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            for section in _references(line):
                found += 1
                if section not in sections:
                    missing.append(f"{path.relative_to(ROOT)}:{number}: spec {section}")
    assert found, "no spec references found: the pattern or the directories are wrong"
    assert not missing, ("references to sections docs/spec.md does not have:\n"
                         + "\n".join(missing))


@pytest.mark.parametrize("text, expected", [
    ("(spec 3.3)", ["3.3"]),
    ("spec 3.3.", ["3.3"]),
    ("spec section 7", ["7"]),
    ("spec sections 2 to 4 and 6", ["2", "4", "6"]),
    ("(spec 3.1, 3.2; style R8)", ["3.1", "3.2"]),
    ("spec 4.2, 6)", ["4.2", "6"]),
    ("spec 3 and 6", ["3", "6"]),
    ("(spec 3.2, ``sorter=\"bubble\"``)", ["3.2"]),
    ("spec 3.1 allows 3", ["3.1"]),
    ("the spec's bound", []),
])
def test_reference_pattern(text, expected):
    assert list(_references(text)) == expected
