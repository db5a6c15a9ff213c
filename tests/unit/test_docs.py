"""The README and the guides under docs/ stay true to the product.

- every ``pfscope ...`` command line they show parses with the real parser (``app.cli._parser``);
- every relative Markdown link resolves to a file, and its ``#anchor`` to a heading of that file;
- the README stays a front page: at most 250 lines.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import unicodedata
from pathlib import Path

import pytest

from pfscope.app.cli import _parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted(
    [README, *(ROOT / "docs").glob("*.md")],
    key=lambda p: p.relative_to(ROOT).as_posix(),
)
README_MAX_LINES = 250

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# `pfscope` as a command word (also .../bin/pfscope; not `Description=pfscope ...`), then a
# lowercase word: the sub-command
COMMAND = re.compile(r"(?:^|(?<=[\s/\"'(]))pfscope[ \t]+(?=[a-z][a-z-]*(?:\s|$))")
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*(?:\.[a-z]+)?|\$\{?[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}?)$")


# ----------------------------------------------------------------------------- reading Markdown


def _code_and_text(path: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(code lines, prose lines) as (line number, text); fenced and indented blocks are code."""
    code: list[tuple[int, str]] = []
    prose: list[tuple[int, str]] = []
    in_fence = False
    previous_blank = True
    in_indented = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            previous_blank = False
            continue
        if in_fence:
            code.append((n, line))
            continue
        indented = line.startswith(("    ", "\t")) and not re.match(r"\s*(?:[-*+]|\d+\.)\s", line)
        if indented and (previous_blank or in_indented) and line.strip():
            in_indented = True
            code.append((n, line))
        else:
            if line.strip():
                in_indented = False
            prose.append((n, line))
        previous_blank = not line.strip()
    return code, prose


def _joined(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Shell continuation lines (ending in a backslash) joined into one."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, text in lines:
        if pending is not None:
            n, text = pending[0], pending[1] + " " + text.strip()
            pending = None
        if text.rstrip().endswith("\\") and not text.rstrip().endswith("\\\\"):
            pending = (n, text.rstrip()[:-1])
            continue
        out.append((n, text))
    if pending is not None:
        out.append(pending)
    return out


def _strip_code(text: str) -> str:
    return INLINE_CODE.sub("", text)


# ----------------------------------------------------------------------------- command lines


def command_lines() -> list[tuple[str, str]]:
    """Every ``pfscope ...`` command line shown in code, as (where, text from ``pfscope`` on)."""
    found: list[tuple[str, str]] = []
    for path in DOCS:
        rel = path.relative_to(ROOT).as_posix()
        code, prose = _code_and_text(path)
        pieces = [(n, t) for n, t in _joined(code)]
        for n, line in prose:
            pieces += [(n, m.group(2)) for m in INLINE_CODE.finditer(line)]
        for n, text in pieces:
            for m in COMMAND.finditer(text):
                found.append((f"{rel}:{n}", text[m.start() :]))
    return found


def _cut_shell(text: str) -> str:
    """The command alone: no comment, redirection, pipe or list after it (outside synopsis brackets)."""
    depth = 0
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "[" and (i == 0 or text[i - 1].isspace() or text[i - 1] == "["):
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif depth == 0:
            if ch == "#" and (i == 0 or text[i - 1].isspace()):
                return text[:i]
            if ch in ";&<>`" or (ch == "|" and text[i - 1 : i] != "\\"):
                return text[:i]
        i += 1
    return text


def _first_alternatives(text: str) -> str:
    """Synopsis notation made concrete: ``[A]`` -> ``A``, ``[A | B]`` -> ``A``, ``X...`` -> ``X``."""
    group = re.compile(r"(?:(?<=\s)|^)\[([^\[\]]*)\](?:\.\.\.)?")
    while True:
        new = group.sub(lambda m: re.split(r"\s*\\?\|\s*", m.group(1))[0], text)
        if new == text:
            break
        text = new
    text = text.replace("\\|", "|")
    return re.sub(r"(\S)\.\.\.(?=\s|$)", r"\1", text)


def _typed(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """A placeholder (``N``, ``SECONDS``, ``$PORT``) given to a number option becomes a number."""
    sub = argv[0]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    subparser = subparsers.choices.get(sub)
    if subparser is None:
        return argv
    kinds = {o: a.type for a in subparser._actions for o in a.option_strings}
    out = list(argv)
    for i in range(1, len(out) - 1):
        if kinds.get(out[i]) in (int, float) and PLACEHOLDER.match(out[i + 1]):
            out[i + 1] = "1"
    return out


def to_argv(text: str) -> list[str] | None:
    """The arguments after ``pfscope``, or None for a line with ``<placeholders>`` it cannot parse."""
    rest = COMMAND.sub("", text, count=1)
    rest = _first_alternatives(_cut_shell(rest)).strip()
    if "<" in rest or ">" in rest or "..." in rest:
        return None
    return _typed(shlex.split(rest), _parser())


COMMANDS = command_lines()


def test_the_docs_show_commands() -> None:
    shown = {to_argv(text)[0] for _, text in COMMANDS if to_argv(text)}
    assert shown >= {"simulate", "replay", "compute", "serve", "report", "rules", "ingest"}


@pytest.mark.parametrize(("where", "text"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_command_line_parses(where: str, text: str) -> None:
    argv = to_argv(text)
    if argv is None:
        pytest.skip(f"placeholder: {text}")
    parser = _parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert argv[0] in subparsers.choices, f"{where}: no such command: {text}"
    if len(argv) == 1:
        return  # the command named in prose (`pfscope compute`), not a command line
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
    except SystemExit:
        pytest.fail(f"{where}: `{text.strip()}` does not parse ({argv}): {err.getvalue().strip()}")


# ----------------------------------------------------------------------------- links


def slug(heading: str) -> str:
    """GitHub's anchor: markup dropped, lowercase, punctuation removed, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = unicodedata.normalize("NFC", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    _, prose = _code_and_text(path)
    for _, line in prose:
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links() -> list[tuple[str, Path, str]]:
    found: list[tuple[str, Path, str]] = []
    for path in DOCS:
        rel = path.relative_to(ROOT).as_posix()
        _, prose = _code_and_text(path)
        for n, line in prose:
            for m in LINK.finditer(_strip_code(line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                found.append((f"{rel}:{n}", path, target))
    return found


LINKS = links()


def test_the_docs_link_their_guides() -> None:
    readme_targets = {t.split("#")[0] for where, _, t in LINKS if where.startswith("README.md:")}
    guides = {p.relative_to(ROOT).as_posix() for p in DOCS if p != README}
    assert guides <= readme_targets, f"guides the README does not link: {sorted(guides - readme_targets)}"


@pytest.mark.parametrize(("where", "source", "target"), LINKS, ids=[f"{w}->{t}" for w, _, t in LINKS])
def test_relative_link_resolves(where: str, source: Path, target: str) -> None:
    file_part, _, anchor = target.partition("#")
    dest = (source.parent / file_part).resolve() if file_part else source
    assert dest.is_relative_to(ROOT), f"{where}: {target} points outside the repository"
    assert dest.exists(), f"{where}: {target}: no such file"
    if anchor:
        assert dest.suffix == ".md", f"{where}: {target}: an anchor into a file that is not Markdown"
        assert anchor in anchors(dest), f"{where}: {target}: no heading #{anchor} in {dest.name}"


def test_no_document_outside_the_repository() -> None:
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text and "/work/" not in text, path


def test_slugs_follow_github() -> None:
    assert slug("Reading Exchange's own logs") == "reading-exchanges-own-logs"
    assert slug("Files that cannot be read whole, and the exit status") == (
        "files-that-cannot-be-read-whole-and-the-exit-status"
    )
    assert slug("The `pfscope` command: 1. Run") == "the-pfscope-command-1-run"
    assert slug("Serving beyond this machine: credentials") == "serving-beyond-this-machine-credentials"


# ----------------------------------------------------------------------------- the front page


def test_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    assert lines[:14] and "bash scripts/demo" in "\n".join(lines[:10])
    assert "bash scripts/test" in "\n".join(lines[:14])
