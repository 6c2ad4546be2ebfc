"""The layout says what the code does: the import layers hold and no package has an import
cycle (import-linter's contracts in pyproject.toml), docs/data-flow.md's folder list is the
real one, no two modules share a name unless they play one role, no class is named like a
builtin or a `typing` name, and no source file cites an issue or a seed number."""

import builtins
import collections.abc
import re
import typing
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "kleene"
#: Module names that several packages share, each for one role: a language's AST, reader and
#: printer; a plan package's plan class and its negations; a subcommand and what it runs.
ONE_ROLE = {
    "ast.py",
    "reader.py",
    "printer.py",
    "plan.py",
    "negation.py",
    "stream.py",
    "recognize.py",
}


def _tree(text: str) -> set[str]:
    """The paths the folder list in a Markdown page names (two spaces a level; a folder
    ends with a slash; the first word of a line is the name)."""
    block = text.split("```\nsrc/kleene/\n", 1)[1].split("```", 1)[0]
    found: set[str] = set()
    folders: dict[int, str] = {}
    for line in ("src/kleene/\n" + block).splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        path = f"{folders[depth - 1]}/{name.rstrip('/')}" if depth else name.rstrip("/")
        if name.endswith("/"):
            folders[depth] = path
        found.add(path)
    return found


def _files() -> set[str]:
    real = set()
    for path in SOURCE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            relative = path.relative_to(ROOT).as_posix()
            real.add(relative)
            real.update(p.as_posix() for p in path.relative_to(ROOT).parents[:-2])
    return real


def test_the_layers_hold_and_no_package_has_an_import_cycle(capsys):
    status = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    assert status == 0, capsys.readouterr().out


def test_the_data_flow_page_lists_the_real_tree():
    listed = _tree((ROOT / "docs" / "data-flow.md").read_text())
    documented = {p for p in listed if p.startswith("src/")}
    assert documented == _files(), {
        "listed, not there": sorted(documented - _files()),
        "there, not listed": sorted(_files() - documented),
    }
    assert all((ROOT / p).exists() for p in listed - documented)


def test_no_two_modules_share_a_name_for_two_roles():
    names: dict[str, list[str]] = {}
    for path in SOURCE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            names.setdefault(path.name, []).append(path.relative_to(SOURCE).as_posix())
    shared = {name: paths for name, paths in names.items() if len(paths) > 1}
    assert set(shared) <= ONE_ROLE, shared


#: Names a class should not take from Python: builtins, collections.abc, typing (but the
#: aliases typing keeps of re's classes, which kleene's `Match` and `Pattern` predate).
STANDARD = (set(dir(builtins)) | set(collections.abc.__all__) | set(typing.__all__)) - {
    "Match",
    "Pattern",
}


def test_no_class_is_named_like_a_builtin_or_typing_name():
    found = [
        (path.relative_to(SOURCE).as_posix(), name)
        for path in SOURCE.rglob("*.py")
        for name in re.findall(r"^\s*class (\w+)", path.read_text(), re.MULTILINE)
        if name in STANDARD
    ]
    assert not found


@pytest.mark.parametrize("folder", ["src", "tests", "benchmarks"])
def test_no_source_file_cites_an_issue_or_a_seed_number(folder):
    cited = re.compile(r"\bissues? \d+|\bissue's|\bseed 00\d|\(seed \d", re.IGNORECASE)
    found = [
        (path.relative_to(ROOT).as_posix(), line.strip())
        for path in (ROOT / folder).rglob("*")
        if path.is_file()
        and path.suffix in (".py", ".lark", ".sh", "")
        and path.name != "test_layout.py"
        for line in path.read_text(errors="replace").splitlines()
        if cited.search(line)
    ]
    assert not found
