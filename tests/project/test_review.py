"""The read-only git review behind shadow_review (SRV-20)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from shadowcode.errors import ToolError
from shadowcode.limits import REVIEW_CHANGES_MAX
from shadowcode.project.review import review

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0, reason="needs git"
)

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV, "HOME": str(root)}
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, encoding="utf-8", timeout=30, check=True
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "keep.txt").write_text("one\ntwo\n", encoding="utf-8")
    (root / "gone.txt").write_text("bye\n", encoding="utf-8")
    (root / "old.txt").write_text("rename me\n" * 20, encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    return root


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.req("SRV-20")
def test_project_without_git_gets_an_empty_review_with_a_note(tmp_path: Path) -> None:
    root = (tmp_path / "plain").resolve()
    root.mkdir()
    result = review(root)
    assert result["git"] is False
    assert result["changes"] == []
    assert result["note"]


@pytest.mark.req("SRV-20")
def test_review_lists_modified_added_deleted_renamed_and_untracked_paths(repo: Path) -> None:
    (repo / "keep.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (repo / "gone.txt").unlink()
    git(repo, "mv", "old.txt", "new.txt")
    (repo / "staged.txt").write_text("s\n", encoding="utf-8")
    git(repo, "add", "staged.txt")
    (repo / "loose.txt").write_text("u\n", encoding="utf-8")
    result = review(repo)
    assert result["git"] is True
    assert result["branch"] == "main"
    assert result["head"] and len(result["head"]) == 12
    changes = {c["path"]: c for c in result["changes"]}
    assert changes["keep.txt"] == {"path": "keep.txt", "status": "modified", "staged": False}
    assert changes["gone.txt"]["status"] == "deleted"
    assert changes["new.txt"] == {"path": "new.txt", "status": "renamed", "staged": True, "from": "old.txt"}
    assert changes["staged.txt"] == {"path": "staged.txt", "status": "added", "staged": True}
    assert changes["loose.txt"] == {"path": "loose.txt", "status": "untracked", "staged": False}
    stat = result["diffstat"]
    assert stat["insertions"] == 1 + 20 + 1
    assert stat["deletions"] == 1 + 20
    assert stat["untracked"] == 1
    assert stat["against"] == "HEAD"
    assert result["truncated"] is False


@pytest.mark.req("SRV-20")
def test_review_of_a_repository_without_commits_compares_with_the_empty_tree(tmp_path: Path) -> None:
    root = (tmp_path / "fresh").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    (root / "a.txt").write_text("a\nb\n", encoding="utf-8")
    git(root, "add", "a.txt")
    result = review(root)
    assert result["branch"] == "trunk"
    assert result["head"] is None
    assert result["changes"] == [{"path": "a.txt", "status": "added", "staged": True}]
    assert result["diffstat"]["against"] == "empty tree"
    assert result["diffstat"]["insertions"] == 2


@pytest.mark.req("SRV-20")
def test_project_inside_a_larger_repository_sees_only_its_own_changes(repo: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "inner.txt").write_text("i\n", encoding="utf-8")
    (repo / "outer.txt").write_text("o\n", encoding="utf-8")
    result = review(repo / "sub")
    assert result["changes"] == [{"path": "inner.txt", "status": "untracked", "staged": False}]


@pytest.mark.req("SRV-20")
def test_changes_at_the_limit_are_all_listed_and_one_more_truncates(repo: Path) -> None:
    (repo / "many").mkdir()
    for index in range(REVIEW_CHANGES_MAX):
        (repo / "many" / f"f{index:04d}.txt").touch()
    at = review(repo)
    assert (len(at["changes"]), at["changes_total"], at["truncated"]) == (REVIEW_CHANGES_MAX, REVIEW_CHANGES_MAX, False)
    (repo / "many" / "extra.txt").touch()
    past = review(repo)
    assert (len(past["changes"]), past["changes_total"], past["truncated"]) == (
        REVIEW_CHANGES_MAX,
        REVIEW_CHANGES_MAX + 1,
        True,
    )


def _status_output_bytes(root: Path) -> int:
    args = [
        "--no-optional-locks",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.quotePath=false",
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--",
        ".",
    ]
    return len(subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=30, check=True).stdout)


@pytest.mark.req("SRV-20")
def test_git_output_at_the_byte_limit_is_whole_and_one_byte_less_room_truncates(repo: Path) -> None:
    for index in range(30):
        (repo / f"u{index:02d}.txt").touch()
    size = _status_output_bytes(repo)
    whole = review(repo, output_max_bytes=size)
    assert (whole["truncated"], whole["changes_total"]) == (False, 30)
    cut = review(repo, output_max_bytes=size - 1)
    assert cut["truncated"] is True
    assert cut["changes_total"] == 29
    assert all(c["path"].startswith("u") and c["path"].endswith(".txt") for c in cut["changes"])


@pytest.mark.req("SRV-20")
def test_review_writes_nothing_to_the_repository(repo: Path) -> None:
    index = repo / ".git" / "index"
    (repo / "keep.txt").write_text("one\ntwo\n", encoding="utf-8")  # same content, new stat data
    os.utime(repo / "keep.txt", (time.time() + 100, time.time() + 100))
    before = (_digest(index), index.stat().st_mtime_ns)
    review(repo)
    assert (_digest(index), index.stat().st_mtime_ns) == before
    assert not (repo / ".git" / "index.lock").exists()


@pytest.mark.req("SRV-20")
def test_repository_fsmonitor_hook_is_not_run(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n", encoding="utf-8")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    review(repo)
    assert not marker.exists()


@pytest.mark.req("SRV-20")
def test_inherited_git_dir_does_not_redirect_the_review(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = (tmp_path / "other").resolve()
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    (repo / "mine.txt").touch()
    assert [c["path"] for c in review(repo)["changes"]] == ["mine.txt"]


@pytest.mark.req("SRV-20")
def test_missing_git_gives_a_note_instead_of_a_review(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = review(repo)
    assert result["git"] is False
    assert "not installed" in result["note"]


@pytest.mark.req("SRV-20")
def test_git_that_never_answers_is_killed_at_the_deadline(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    pid_file = tmp_path / "git.pid"
    fake = fake_bin / "git"
    fake.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 60\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    started = time.monotonic()
    with pytest.raises(ToolError, match="did not finish within 0.5 s"):
        review(repo, timeout_seconds=0.5)
    assert time.monotonic() - started < 5
    pid = int(pid_file.read_text(encoding="utf-8"))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.req("SRV-20")
def test_review_never_runs_a_content_filter_from_the_repository_config(tmp_path: Path) -> None:
    marker = tmp_path / "filter-ran"
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=30)
    subprocess.run(
        ["git", "config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'"], cwd=repo, check=True, timeout=30
    )
    (repo / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")
    (repo / "f.txt").write_text("a\n", encoding="utf-8")
    subprocess.run(["git", "-c", "filter.evil.clean=", "add", "-A"], cwd=repo, check=True, timeout=30)
    (repo / "f.txt").write_text("b\n", encoding="utf-8")
    result = review(repo.resolve())
    assert any(c["path"] == "f.txt" for c in result["changes"])
    assert not marker.exists()


# --- programs the repository configures never run (SRV-20) ----------------------------------
#
# Each test points one kind of program at a script that leaves a marker file, makes the
# review reach the point where git would start it, and checks the marker is absent.


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.fixture
def evil(tmp_path: Path, markers: Path) -> str:
    """A command that records that it ran (its first argument names the kind) and passes stdin on."""
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch "{markers}/$1"\nexec cat\n', encoding="utf-8")
    script.chmod(0o755)
    return str(script)


def _ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def _filtered_change(repo: Path, driver: str = "evil") -> None:
    """Put every file under ``driver`` and change keep.txt so git must hash it again."""
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text(f"* filter={driver}\n", encoding="utf-8")
    _same_size_change(repo / "keep.txt")


def _same_size_change(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data.swapcase() if data.swapcase() != data else data[::-1])
    later = time.time() + 10
    os.utime(path, (later, later))


@pytest.mark.req("SRV-20")
def test_a_clean_filter_defined_after_a_70_kb_config_value_does_not_run(repo: Path, evil: str, markers: Path) -> None:
    git(repo, "config", "filter.padding.smudge", "x" * 70_000)  # a long value before the driver
    git(repo, "config", "filter.evil.clean", f"{evil} clean")
    git(repo, "config", "filter.evil.smudge", f"{evil} smudge")
    _filtered_change(repo)
    result = review(repo)
    assert [c["path"] for c in result["changes"]] == ["keep.txt"]
    assert _ran(markers) == []


@pytest.mark.req("SRV-20")
def test_a_process_filter_does_not_run(repo: Path, evil: str, markers: Path) -> None:
    git(repo, "config", "filter.long-running.process", f"{evil} process")
    git(repo, "config", "filter.long-running.required", "true")
    _filtered_change(repo, "long-running")
    assert [c["path"] for c in review(repo)["changes"]] == ["keep.txt"]
    assert _ran(markers) == []


@pytest.mark.req("SRV-20")
def test_filters_and_fsmonitor_from_included_files_do_not_run(
    repo: Path, evil: str, markers: Path, tmp_path: Path
) -> None:
    included = tmp_path / "included.cfg"
    included.write_text(f'[filter "inc"]\n\tclean = {evil} include\n[core]\n\tfsmonitor = {evil}\n', encoding="utf-8")
    conditional = tmp_path / "conditional.cfg"
    conditional.write_text(f'[filter "cond"]\n\tclean = {evil} includeif\n', encoding="utf-8")
    git(repo, "config", "include.path", str(included))
    git(repo, "config", f"includeIf.gitdir:{repo}/.git.path", str(conditional))
    (repo / ".gitattributes").write_text("keep.txt filter=inc\ngone.txt filter=cond\n", encoding="utf-8")
    _same_size_change(repo / "keep.txt")
    _same_size_change(repo / "gone.txt")
    review(repo)
    assert _ran(markers) == []


@pytest.mark.req("SRV-20")
def test_a_clean_filter_in_a_submodule_config_does_not_run(
    repo: Path, evil: str, markers: Path, tmp_path: Path
) -> None:
    upstream = (tmp_path / "upstream").resolve()
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    (upstream / "s.txt").write_text("sub\n", encoding="utf-8")
    git(upstream, "add", ".")
    git(upstream, "commit", "-q", "-m", "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(repo, "commit", "-q", "-m", "add sub")
    sub = repo / "sub"
    git(sub, "commit", "-q", "--allow-empty", "-m", "moved on")
    git(sub, "config", "filter.subevil.clean", f"{evil} submodule")
    (sub / ".gitattributes").write_text("* filter=subevil\n", encoding="utf-8")
    _same_size_change(sub / "s.txt")
    result = review(repo)
    assert {"path": "sub", "status": "modified", "staged": False} in result["changes"]
    assert _ran(markers) == []


@pytest.mark.req("SRV-20")
def test_hooks_do_not_run_even_where_the_index_would_be_written(
    repo: Path, evil: str, markers: Path, tmp_path: Path
) -> None:
    for folder in (repo / ".git" / "hooks", tmp_path / "repo-hooks"):
        folder.mkdir(exist_ok=True)
        for name in ("post-index-change", "reference-transaction", "pre-auto-gc"):
            hook = folder / name
            hook.write_text(f'#!/bin/sh\n"{evil}" hook-{folder.name}-{name} </dev/null\n', encoding="utf-8")
            hook.chmod(0o755)
    git(repo, "config", "core.hooksPath", str(tmp_path / "repo-hooks"))
    _same_size_change(repo / "keep.txt")
    review(repo)
    assert _ran(markers) == []


@pytest.mark.req("SRV-20")
def test_pagers_and_diff_programs_do_not_run(repo: Path, evil: str, markers: Path) -> None:
    git(repo, "config", "core.pager", f"{evil} pager")
    git(repo, "config", "pager.status", f"{evil} pager-status")
    git(repo, "config", "diff.external", f"{evil} external-diff")
    git(repo, "config", "diff.evil.command", f"{evil} diff-command")
    git(repo, "config", "diff.evil.textconv", f"{evil} textconv")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* diff=evil\n", encoding="utf-8")
    (repo / "keep.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    result = review(repo)
    assert result["diffstat"]["insertions"] == 1
    assert _ran(markers) == []


def _partial_clone(repo: Path, url: str) -> None:
    """Make ``repo`` a partial clone missing keep.txt's committed blob, with ``url`` as its promisor."""
    blob = git(repo, "rev-parse", "HEAD:keep.txt").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    git(repo, "config", "core.repositoryformatversion", "1")
    git(repo, "config", "extensions.partialClone", "origin")
    git(repo, "config", "remote.origin.url", url)
    (repo / "keep.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")


@pytest.mark.req("SRV-20")
def test_a_partial_clone_never_fetches_through_the_repository_upload_pack(
    repo: Path, evil: str, markers: Path, tmp_path: Path
) -> None:
    server = tmp_path / "server"
    server.mkdir()
    git(server, "init", "-q", "--bare")
    _partial_clone(repo, server.as_uri())
    git(repo, "config", "remote.origin.uploadpack", f"{evil} upload-pack")
    result = review(repo)
    assert [c["path"] for c in result["changes"]] == ["keep.txt"]
    assert _ran(markers) == []


@pytest.mark.req("SRV-20")
def test_a_partial_clone_never_runs_an_ext_remote_command(repo: Path, evil: str, markers: Path) -> None:
    _partial_clone(repo, f"ext::{evil} ext-remote")
    git(repo, "config", "protocol.ext.allow", "always")
    review(repo)
    assert _ran(markers) == []


class _AskForCredentials(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="review"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the standard library's name)
        return


@pytest.fixture
def asks_for_credentials() -> Iterator[str]:
    """A loopback HTTP server that answers every request with 401, so git would ask for credentials."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AskForCredentials)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/repo.git"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.req("SRV-20")
def test_a_partial_clone_never_asks_the_repository_credential_helper(
    repo: Path, evil: str, markers: Path, asks_for_credentials: str
) -> None:
    _partial_clone(repo, asks_for_credentials)
    git(repo, "config", "credential.helper", f"!{evil} credential-helper")
    git(repo, "config", "core.askPass", f"{evil} askpass")
    review(repo)
    assert _ran(markers) == []


@pytest.mark.req("SRV-20")
def test_configuration_naming_too_many_keys_is_refused_and_at_the_limit_reviewed(repo: Path) -> None:
    for index in range(20):
        git(repo, "config", f"filter.f{index:02d}.clean", "cat")
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    names = subprocess.run(
        ["git", "config", "--list", "--name-only", "-z", "--includes"],
        cwd=repo, env=env, capture_output=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    assert review(repo, config_names_max_bytes=len(names))["git"] is True
    with pytest.raises(ToolError, match=f"more than {len(names) - 1} bytes of keys"):
        review(repo, config_names_max_bytes=len(names) - 1)


@pytest.mark.req("SRV-20")
def test_a_filter_driver_that_cannot_be_overridden_exactly_refuses_the_review(
    repo: Path, evil: str, markers: Path
) -> None:
    with (repo / ".git" / "config").open("a", encoding="utf-8") as config:
        config.write(f'[filter "a=b"]\n\tclean = {evil} equals\n')
    _filtered_change(repo, "a=b")
    with pytest.raises(ToolError, match="could not be switched off"):
        review(repo)
    assert _ran(markers) == []
