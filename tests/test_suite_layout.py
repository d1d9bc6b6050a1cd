"""The test suite's own layout: each fixture defined once, never imported into a test module, and
test folders that mirror the code (STYLE.md, Tests).

A name defined twice means a copy that will drift, or a fixture that shadows another (a module-scoped
`live` over the per-test one meant a shared or a fresh server depending on the file). Fixtures live in
tests/conftest.py, in a folder's conftest.py when only that folder takes them, or in the one test
module that takes them.
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from pathlib import Path

from tests.support.paths import REPO

TESTS = Path(REPO) / "tests"
# Folders of tests/ that are no package of the code: shared helpers, the real clients, the web client
# in a browser, and zulip-js's Node project (node_modules installed there by `npm ci`).
NOT_PACKAGES = {"support", "clients", "browser", "js"}
# Folders of the repository with code that is no Python package, run by their tests as scripts.
SCRIPT_FOLDERS = {"bench", "packaging"}
# Names pytest should see defined twice on purpose (an override in a folder's conftest.py): none.
OVERRIDES: set[str] = set()


def python_files() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "node_modules" not in path.parts)


def fixture_decorator(node: ast.expr) -> ast.Call | ast.expr | None:
    """The decorator if it makes a fixture: @pytest.fixture, @pytest.fixture(...), @fixture,
    @pytest_asyncio.fixture (with or without arguments)."""
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute) and target.attr == "fixture":
        return node
    if isinstance(target, ast.Name) and target.id == "fixture":
        return node
    return None


def fixture_definitions(source: str) -> list[tuple[str, int]]:
    """(fixture name, line) of every fixture a module defines, by its name= when it gives one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if fixture_decorator(decorator) is None:
                continue
            name = node.name
            if isinstance(decorator, ast.Call):
                for keyword in decorator.keywords:
                    if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                        name = keyword.value.value
            found.append((name, node.lineno))
    return found


def all_fixtures() -> dict[str, list[str]]:
    """Fixture name: where each definition is (path:line), over every module under tests/."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in python_files():
        for name, line in fixture_definitions(path.read_text(encoding="utf-8")):
            where[name].append(f"{path.relative_to(TESTS)}:{line}")
    return where


def duplicates(where: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: places for name, places in where.items() if len(places) > 1 and name not in OVERRIDES}


def imported_fixtures(source: str, fixtures: set[str]) -> list[tuple[str, int]]:
    """Fixtures a module takes from another module of tests/: `from tests.x import fixture`, or
    `fixture = x.fixture` where x was imported from tests."""
    found = []
    from_tests: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").split(".")[0] == "tests"):
            found += [(alias.asname or alias.name, node.lineno) for alias in node.names if alias.name in fixtures]
            from_tests |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            from_tests |= {alias.asname or alias.name for alias in node.names if alias.name.split(".")[0] == "tests"}
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr in fixtures:
            module = node.value.value
            if isinstance(module, ast.Name) and module.id in from_tests:
                found += [(target.id, node.lineno) for target in node.targets if isinstance(target, ast.Name)]
    return found


def test_the_scan_finds_every_form_of_fixture():
    source = (
        "import pytest, pytest_asyncio\nfrom pytest import fixture\n"
        "@pytest.fixture\ndef a(): ...\n"
        "@pytest.fixture(scope='module')\ndef b(): ...\n"
        "@fixture\ndef c(): ...\n"
        "@pytest_asyncio.fixture\nasync def d(): ...\n"
        "@pytest_asyncio.fixture(scope='module')\nasync def e(): ...\n"
        "@pytest.fixture(name='f')\ndef f_fixture(): ...\n"
        "@pytest.mark.parametrize('x', [1])\ndef test_g(x): ...\n"
        "def helper(): ...\n"
    )
    assert [name for name, _ in fixture_definitions(source)] == ["a", "b", "c", "d", "e", "f"]
    assert duplicates({"a": ["x.py:1"], "b": ["x.py:2", "y.py:3"]}) == {"b": ["x.py:2", "y.py:3"]}


def test_each_fixture_is_defined_once():
    where = all_fixtures()
    assert "live" in where and "shared_live" in where  # the scan sees tests/conftest.py
    assert duplicates(where) == {}, "defined more than once: give each its own name or define it once in a conftest.py"


def test_no_test_module_imports_a_fixture():
    """A fixture imported (or bound) into a module is one more definition pytest sees there."""
    fixtures = set(all_fixtures())
    sample = (
        "from storage import live\n"  # not from tests/: a name like a fixture's
        "from tests.x import live, helper\n"
        "from tests import conftest\n"
        "live2 = conftest.live\n"
    )
    assert imported_fixtures(sample, fixtures) == [("live", 2), ("live2", 4)]
    found = {
        f"{path.relative_to(TESTS)}:{line}": name
        for path in python_files()
        for name, line in imported_fixtures(path.read_text(encoding="utf-8"), fixtures)
    }
    assert found == {}, "define these fixtures in a conftest.py instead"


def folder_is_allowed(folder: Path) -> bool:
    """A test folder is named after a package or module of the code (tests/storage/db for storage/db,
    tests/tornchat/events for tornchat/events.py or tornchat/events/), a script folder, or one of the
    folders that are no package."""
    parts = folder.relative_to(TESTS).parts
    if parts[0] in NOT_PACKAGES:
        return True
    code = Path(REPO).joinpath(*parts)
    if (code / "__init__.py").is_file() or code.with_suffix(".py").is_file():
        return True
    return len(parts) == 1 and parts[0] in SCRIPT_FOLDERS and code.is_dir()


def test_folder_rule():
    assert folder_is_allowed(TESTS / "storage" / "db")
    assert folder_is_allowed(TESTS / "tornchat" / "events")
    assert folder_is_allowed(TESTS / "support")
    assert not folder_is_allowed(TESTS / "storage" / "nowhere")
    assert not folder_is_allowed(TESTS / "misc")
    assert not folder_is_allowed(TESTS / "bench" / "more")


def test_test_folders_mirror_the_code():
    folders = [
        Path(root)
        for root, dirs, _ in os.walk(TESTS)
        if Path(root) != TESTS
        and not {"node_modules", "__pycache__"} & set(Path(root).parts)
        and not Path(root).name.startswith(".")
    ]
    assert TESTS / "storage" / "db" in folders
    assert [str(folder.relative_to(TESTS)) for folder in folders if not folder_is_allowed(folder)] == []
    # The suite imports tests.* modules: every folder of Python files is a package. tests/js holds Node.
    packages = [folder for folder in folders if folder.relative_to(TESTS).parts[0] != "js"]
    assert [str(folder.relative_to(TESTS)) for folder in packages if not (folder / "__init__.py").is_file()] == []
