"""The conformance suite as its own distribution: what it declares, finds and bundles (CONF-01).

``conformance/pyproject.toml`` must name exactly the third-party packages its package,
``shadowcode_conformance``, imports, and nothing of the implementation it checks. From its source
folder the suite reads its own ``fixtures/`` and ``node_probes/``; installed, it copies the ones
the build took as package data into a cache folder (see ``shadowcode_conformance/resources.py``).
The build names no path outside ``conformance/``, and the package has a folder of its own (no
``"."`` mapping), so the generic name ``conformance`` imports nothing of it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from shadowcode_conformance import resources

pytestmark = pytest.mark.req("CONF-01")

DISTRIBUTION = Path(__file__).resolve().parents[1]
"""The distribution's folder: ``pyproject.toml``, ``README.md``, ``tests/`` and the package."""
PACKAGE = DISTRIBUTION / "shadowcode_conformance"
DISTRIBUTIONS = {"anyio": "anyio", "h11": "h11", "httpx2": "httpx2", "mcp": "mcp", "yaml": "pyyaml"}
"""Top-level import name to the distribution that provides it."""


LEFT_OUT = ("build", "tests", *resources.DATA)
"""Not scanned for the distribution's imports: the fixtures bring their own; tests are not packaged."""


def _imported_top_levels(folder: Path = PACKAGE, leave_out: tuple[str, ...] = LEFT_OUT) -> set[str]:
    """The top-level names the ``.py`` files under ``folder`` import, but those under ``leave_out``."""
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        if set(leave_out) & set(path.relative_to(folder).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def _declared() -> set[str]:
    with (DISTRIBUTION / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    return {re.split(r"[<>=!~ ;\[]", line, maxsplit=1)[0].lower() for line in project["dependencies"]}


def test_the_distribution_declares_exactly_what_the_suite_imports() -> None:
    third_party = _imported_top_levels() - set(sys.stdlib_module_names) - {"shadowcode_conformance", "__future__"}
    assert "shadowcode" not in third_party
    assert third_party <= DISTRIBUTIONS.keys(), f"map these to their distribution: {third_party - DISTRIBUTIONS.keys()}"
    assert _declared() == {DISTRIBUTIONS[name] for name in third_party}


def test_the_suites_own_tests_import_nothing_of_the_implementation_or_its_tests() -> None:
    """They run from this folder alone; the few that start the implementation do it as a process."""
    imported = _imported_top_levels(Path(__file__).parent, leave_out=())
    assert not {"shadowcode", "tests"} & imported


def test_from_the_checkout_the_suite_reads_the_checkout_and_runs_helpers_with_this_interpreter() -> None:
    if resources.PACKAGE != PACKAGE:
        pytest.skip("the conformance package imported here is an installed copy, not this folder")
    assert resources.resource_root(["cli_usage"], say=pytest.fail) == PACKAGE
    assert resources.helper_python() == sys.executable


def test_a_bundled_baseline_is_found_by_name_and_a_path_stays_a_path(tmp_path: Path) -> None:
    assert resources.bundled_baseline("python-sdk-server") == resources.BASELINES / "python-sdk-server.yml"
    assert resources.bundled_baseline("server-everything.yml") == resources.BASELINES / "server-everything.yml"
    assert (resources.BASELINES / "python-sdk-server.yml").is_file()
    assert resources.bundled_baseline("no-such-baseline") == Path("no-such-baseline")
    own = tmp_path / "python-sdk-server"
    assert resources.bundled_baseline(str(own)) == own


def test_an_installed_copy_uses_its_bundle_from_the_cache_and_says_how_to_set_up_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "shadowcode_conformance"
    (package / "fixtures").mkdir(parents=True)
    (package / "fixtures" / "sample_project.py").write_text("def make_sample_project(dest): ...\n", encoding="utf-8")
    (package / "node_probes" / "node_modules").mkdir(parents=True)  # an earlier install here is never copied
    for name in ("package.json", "package-lock.json"):
        (package / "node_probes" / name).write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(resources, "PACKAGE", package)
    monkeypatch.setattr(resources, "_bundle_key", lambda: "k")
    monkeypatch.setenv("SHADOWCODE_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # neither node nor npm
    said: list[str] = []

    root = resources.resource_root(["cli_usage", "node_stdio"], say=said.append)

    assert root == tmp_path / "cache" / "root-k"
    assert (root / "fixtures" / "sample_project.py").is_file()
    assert (root / "node_probes" / "package.json").is_file() and not (root / "node_probes" / "node_modules").exists()
    assert len(said) == 1 and "node and npm are not on PATH" in said[0] and "(node_stdio)" in said[0]
    assert said[0].endswith(f"cd {root / 'node_probes'} && npm ci --no-audit --no-fund --loglevel=error")
    wrapper = Path(resources.helper_python())
    assert wrapper.parent == root / "bin" and str(package.parent) in wrapper.read_text(encoding="utf-8")

    said.clear()  # a second run reuses the copy and says nothing when no selected check needs Node
    assert resources.resource_root(["cli_usage"], say=said.append) == root and said == []


def test_the_build_names_no_path_outside_its_folder() -> None:
    with (DISTRIBUTION / "pyproject.toml").open("rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    assert "package-dir" not in setuptools  # each package is the folder of its name, below this one
    assert all(name.split(".")[0] == "shadowcode_conformance" for name in setuptools["packages"])
    assert all((DISTRIBUTION / name.replace(".", "/")).is_dir() for name in setuptools["packages"])
    assert not (DISTRIBUTION / "__init__.py").exists()
    assert not [p for globs in setuptools["package-data"].values() for p in globs if ".." in p or "node_modules" in p]


def test_the_generic_name_conformance_imports_nothing_of_the_suite() -> None:
    """Beside this folder, ``conformance`` is at most an empty namespace: none of the suite's modules."""
    done = subprocess.run(
        [sys.executable, "-c", "import conformance.cli"],
        cwd=DISTRIBUTION.parent,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'conformance" in done.stderr, done.stderr
