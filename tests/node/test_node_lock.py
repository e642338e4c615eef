"""ci/node_lock.py: the optional platform packages npm leaves out of the Node probes' lock are added back."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _node_lock() -> ModuleType:
    spec = importlib.util.spec_from_file_location("node_lock", REPO / "ci" / "node_lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_lock_lists_every_optional_package() -> None:
    done = subprocess.run(
        [sys.executable, "ci/node_lock.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_missing_platform_packages_are_added_where_npm_looks_with_their_platform() -> None:
    node_lock = _node_lock()
    packages = {
        "": {"dependencies": {"host": "1.0.0"}},
        "node_modules/host": {
            "version": "1.0.0",
            "optionalDependencies": {
                "host-linux-x64": "1.0.0",
                "host-darwin-arm64": "1.0.0",
                "@h/clip-win32-x64-msvc": "2.0.0",
                "host-linux-x64-musl": "1.0.0",
                "ranged": "^1.2.0",
            },
        },
        "node_modules/host-linux-x64": {"version": "1.0.0", "os": ["linux"], "cpu": ["x64"]},
        "node_modules/other": {"version": "1.0.0", "optionalDependencies": {"host-darwin-arm64": "9.9.9"}},
    }
    assert {(name, version) for _, name, version in node_lock.missing(packages)} == {
        ("host-darwin-arm64", "1.0.0"),
        ("@h/clip-win32-x64-msvc", "2.0.0"),
        ("host-linux-x64-musl", "1.0.0"),
        ("ranged", "^1.2.0"),
        ("host-darwin-arm64", "9.9.9"),
    }
    added = node_lock.fix(packages)
    assert packages["node_modules/host-darwin-arm64"] == {
        "version": "1.0.0",
        "optional": True,
        "os": ["darwin"],
        "cpu": ["arm64"],
    }
    assert packages["node_modules/other/node_modules/host-darwin-arm64"]["version"] == "9.9.9"
    assert packages["node_modules/@h/clip-win32-x64-msvc"] == {
        "version": "2.0.0",
        "optional": True,
        "os": ["win32"],
        "cpu": ["x64"],
    }
    assert packages["node_modules/host-linux-x64-musl"]["libc"] == ["musl"]
    assert "node_modules/ranged" not in packages  # a range is the registry's to resolve
    assert len(added) == 4
    assert [(n, v) for _, n, v in node_lock.missing(packages)] == [("ranged", "^1.2.0")]
