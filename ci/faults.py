"""Inject faults into a copy of ``shadowcode/`` one at a time and see whether the conformance suite catches each.

Usage (through ``bash ci/faults``)::

    ci/faults                 every fault in ci/faults.yml
    ci/faults --only NAME     one fault (repeatable)
    ci/faults --verify        the checks each fault is tried with first, against the unmodified tree
    ci/faults --ids-only      skip the whole run for a fault the checks of its ids miss
    ci/faults --suite COMMIT  run the conformance suite as it was at COMMIT (to measure before new checks)

A fault is ``{name, covers: [ids], file: shadowcode/..., find: "...", replace: "..."}``; ``find``
must occur exactly once in ``file``. For each fault ``shadowcode/`` is copied into a fresh
temporary folder, the replacement applied there, and the suite run against
``env PYTHONPATH=<copy> <this python> -m shadowcode``: first only the checks covering the fault's
ids (``python -m conformance --list``), and when none of them fails, the whole default run. A
fault is caught when a run exits non-zero with at least one failing check.

The runner itself runs in a temporary folder with the checkout on its PYTHONPATH: the suite
starts targets in its own working directory, and ``python -m`` puts that directory first on
``sys.path``, so a run from the checkout would import the checkout's ``shadowcode`` and never
the copy. The runner leaves PYTHONPATH out of every target's environment; the target command
sets its own. Each copy is checked to be the one imported before the suite runs.

Writes a Markdown table to stdout and ``faults-out/faults.json`` (``--out`` to change the folder).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
FAULTS = REPO / "ci" / "faults.yml"
KEYS = {"name", "covers", "file", "find", "replace"}
SUITE = REPO
"""The folder whose ``conformance`` package runs: the checkout, or an older suite (``--suite``)."""


def load_faults(path: Path) -> list[dict]:
    """The fault list, each entry checked for its keys and a ``find`` occurring exactly once."""
    faults = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    names = set()
    for fault in faults:
        if set(fault) != KEYS:
            raise SystemExit(f"{fault.get('name', fault)}: keys must be exactly {sorted(KEYS)}")
        if fault["name"] in names:
            raise SystemExit(f"{fault['name']}: listed twice")
        names.add(fault["name"])
        text = (REPO / fault["file"]).read_text(encoding="utf-8")
        count = text.count(fault["find"])
        if count != 1:
            raise SystemExit(f"{fault['name']}: `find` occurs {count} times in {fault['file']}, not once")
    return faults


def checks_by_id(run_dir: Path) -> dict[str, list[str]]:
    """Requirement id to the registered checks covering it, from ``python -m conformance --list``."""
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "--list"],
        cwd=run_dir, env=runner_env(), capture_output=True, text=True, encoding="utf-8", check=True,
    )  # fmt: skip
    index: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        name, _, ids = line.partition("\t")
        for rid in filter(None, ids.split(",")):
            index.setdefault(rid, []).append(name)
    return index


def runner_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(SUITE)
    return env


def export_suite(commit: str) -> Path:
    """The suite as of ``commit`` (conformance/, fixtures/, node_probes/) in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="faults-suite-"))
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "conformance", "fixtures", "node_probes"],
        capture_output=True, check=True,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    (folder / "node_probes" / "node_modules").symlink_to(REPO / "node_probes" / "node_modules")
    return folder


def make_copy(fault: dict | None) -> Path:
    """A fresh ``<tmp>/shadowcode`` copy with the fault applied (none for None); returns ``<tmp>``."""
    parent = Path(tempfile.mkdtemp(prefix="faults-src-"))
    shutil.copytree(REPO / "shadowcode", parent / "shadowcode", ignore=shutil.ignore_patterns("__pycache__"))
    if fault is not None:
        path = parent / fault["file"]
        text = path.read_text(encoding="utf-8")
        if text.count(fault["find"]) != 1:
            raise SystemExit(f"{fault['name']}: `find` does not occur exactly once in {fault['file']}")
        path.write_text(text.replace(fault["find"], fault["replace"]), encoding="utf-8")
    return parent


def target_argv(copy: Path) -> list[str]:
    return ["env", f"PYTHONPATH={copy}", sys.executable, "-m", "shadowcode"]


def assert_copy_imported(copy: Path, run_dir: Path) -> None:
    """Refuse to go on unless the target command, run where the suite runs it, imports the copy."""
    probe = [*target_argv(copy)[:-2], "-c", "import shadowcode; print(shadowcode.__file__)"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(probe, cwd=run_dir, env=env, capture_output=True, text=True, encoding="utf-8").stdout
    if not out.strip().startswith(str(copy)):
        raise SystemExit(f"the target imports {out.strip()!r}, not the copy in {copy}")


def run_suite(copy: Path, only: list[str] | None, out: Path, jobs: int) -> dict:
    """One conformance run; returns ``{exit, failed: [{name, detail}], seconds}``."""
    run_dir = Path(tempfile.mkdtemp(prefix="faults-run-"))
    try:
        assert_copy_imported(copy, run_dir)
        argv = [sys.executable, "-m", "conformance", "--target", " ".join(target_argv(copy))]
        argv += ["--out", str(out), "--jobs", str(jobs)]
        if only:
            argv += ["--only", ",".join(only)]
        started = time.monotonic()
        done = subprocess.run(argv, cwd=run_dir, env=runner_env(), capture_output=True, text=True, encoding="utf-8")
        seconds = time.monotonic() - started
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    (out / "runner.log").parent.mkdir(parents=True, exist_ok=True)
    (out / "runner.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    failed = []
    report = out / "report.json"
    if report.exists():
        checks = json.loads(report.read_text(encoding="utf-8"))["checks"]
        failed = [{"name": c["name"], "detail": c["detail"]} for c in checks if c["status"] == "fail"]
    return {"exit": done.returncode, "failed": failed, "seconds": seconds}


def try_fault(fault: dict, index: dict[str, list[str]], out: Path, jobs: int, full: bool = True) -> dict:
    """Run the id-first checks, then (when nothing failed) the whole default run."""
    first = sorted({name for rid in fault["covers"] for name in index.get(rid, [])})
    copy = make_copy(fault)
    started = time.monotonic()
    try:
        stages = [("ids", first)] if first else []
        if full:
            stages.append(("full", None))
        stage, result, caught = "none", {"exit": None, "failed": []}, False
        for stage, only in stages:
            result = run_suite(copy, only, out / fault["name"] / stage, jobs)
            caught = result["exit"] != 0 and bool(result["failed"])
            if caught:
                break
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return {
        "name": fault["name"],
        "covers": fault["covers"],
        "caught": caught,
        "stage": stage,
        "exit": result["exit"],
        "failed": result["failed"],
        "seconds": round(time.monotonic() - started, 1),
    }


def verify(faults: list[dict], index: dict[str, list[str]], out: Path, jobs: int) -> int:
    """Run every fault's id-first checks against the unmodified tree, once; they must all pass."""
    names = sorted({name for f in faults for rid in f["covers"] for name in index.get(rid, [])})
    copy = make_copy(None)
    try:
        result = run_suite(copy, names, out / "verify", jobs)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    sys.stdout.write(f"verify: {len(names)} checks, exit {result['exit']}, {result['seconds']:.0f} s" + "\n")
    for f in result["failed"]:
        sys.stdout.write(f"  FAILED {f['name']}: {f['detail'][:300]}" + "\n")
    return 0 if result["exit"] == 0 and not result["failed"] else 1


def short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table(results: list[dict]) -> str:
    rows = ["| Fault | Ids | Caught by | What the check said | Seconds |", "|---|---|---|---|---|"]
    for r in results:
        by = ", ".join(f"`{f['name']}`" for f in r["failed"][:3]) or "**missed**"
        if r["caught"] and r["stage"] == "full":
            by += " (whole run)"
        if r["failed"]:
            detail = short(r["failed"][0]["detail"])
        elif r["stage"] == "none":
            detail = "no check covers its ids (whole run skipped)"
        else:
            detail = f"every check passed ({'whole run' if r['stage'] == 'full' else 'checks of its ids'})"
        rows.append(f"| {r['name']} | {', '.join(r['covers'])} | {by} | {detail} | {r['seconds']:.0f} |")
    caught = sum(r["caught"] for r in results)
    rows.append("")
    rows.append(f"Caught {caught} of {len(results)} ({100 * caught / max(len(results), 1):.0f} %).")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this fault (repeatable)")
    parser.add_argument("--verify", action="store_true", help="run the id-first checks against the unmodified tree")
    parser.add_argument("--faults", type=Path, default=FAULTS, help="the fault list (default: ci/faults.yml)")
    parser.add_argument("--out", type=Path, default=REPO / "faults-out", help="folder for reports")
    parser.add_argument("--suite", metavar="COMMIT", help="run the conformance suite as of this commit")
    parser.add_argument("--ids-only", action="store_true", help="skip the whole run for a fault its ids' checks miss")
    parser.add_argument("--jobs", type=int, default=3, help="checks run at once (default: 3)")
    args = parser.parse_args(argv)
    faults = load_faults(args.faults)
    if args.only:
        unknown = set(args.only) - {f["name"] for f in faults}
        if unknown:
            raise SystemExit(f"no such fault: {', '.join(sorted(unknown))}")
        faults = [f for f in faults if f["name"] in args.only]
    out = args.out.resolve()
    if args.suite:
        global SUITE
        SUITE = export_suite(args.suite)
    scratch = Path(tempfile.mkdtemp(prefix="faults-list-"))
    try:
        index = checks_by_id(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.verify:
        return verify(faults, index, out, args.jobs)
    results = []
    started = time.monotonic()
    for fault in faults:
        result = try_fault(fault, index, out, args.jobs, full=not args.ids_only)
        results.append(result)
        verdict = "caught" if result["caught"] else "MISSED"
        sys.stderr.write(f"faults: {fault['name']}: {verdict} ({result['stage']}, {result['seconds']:.0f} s)\n")
        out.mkdir(parents=True, exist_ok=True)
        (out / "partial.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    total = round(time.monotonic() - started, 1)
    summary = {"faults": results, "caught": sum(r["caught"] for r in results), "total": len(results), "seconds": total}
    (out / "faults.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stdout.write(table(results) + "\n")
    sys.stdout.write(f"\nTook {total / 60:.1f} min." + "\n")
    return 0 if all(r["caught"] for r in results) else 1


def _main() -> int:
    try:
        return main()
    finally:
        if SUITE != REPO:
            shutil.rmtree(SUITE, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(_main())
