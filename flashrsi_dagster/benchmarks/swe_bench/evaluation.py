"""Evaluating a patch as the official harness does, in the local environment, then grading it
with the `swebench` package's own `get_eval_report`.

The steps are the harness's (`swebench.harness.run_evaluation` and the eval script it writes
into an instance's image): apply the model's patch to a fresh checkout at `base_commit`
(`git apply`, then `patch --fuzz=5`), restore the files the test patch touches and apply it,
run the tests between the harness's start and end markers, record the command's exit code;
the log, written in the harness's format, is graded by `get_eval_report` with its pytest log
parser. What differs is where the tests run: not in the instance's image (which needs Docker
and a registry, or the image built from the harness's specs for that repo and version) but
on this machine's Python with pytest, jailed as an agent's processes are (read-only system
and runtime, the checkout writable, no network) unless the experiment is unconfined. So an
instance runs here when its repository's tests need nothing beyond the standard library and
pytest; see docs/benchmarks.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from flashrsi_dagster.benchmarks.base import SystemicFault, Task
from flashrsi_dagster.benchmarks.swe_bench import repos
from flashrsi_dagster.environments.jail import Jail, Mount, give_to_jail_user
from flashrsi_dagster.environments.runtime import python_runtime, site_packages

TEST_TIMEOUT = 900.0
"""Seconds the test command may run (the harness's default timeout is 1,800)."""
TEST_RUNTIME = ("pytest",)
"""What the tests may import beyond the repository and the standard library."""
LOG_PARSER = "parse_log_pytest"
PYTEST_ARGS = ("-rA", "--tb=no", "-p", "no:cacheprovider")
PYTEST_CONFIGURATION = ("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg")
PYTEST_CONFIGURATION += ("pyproject.toml",)
"""Files, in any folder, whose content pytest runs or reads as its own configuration (hooks,
`addopts = -p plugin`): a model patch's version of one could rewrite the test report, so each
is reset to `base_commit` before the tests run, as the test files are. Nothing installs the
repository here, so these files matter only to pytest."""
NO_PLUGIN_AUTOLOAD = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""A `*.dist-info/entry_points.txt` in the checkout (on `sys.path` as the working folder)
would otherwise load a `pytest11` plugin of the patch's; the tests' runtime is pytest alone."""
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def files_under_test(test_patch: str) -> list[str]:
    """The files the test patch touches: the tests the harness runs for a pytest repo."""
    return list(dict.fromkeys(_DIFF_FILE.findall(test_patch)))


def evaluation_log(task: Task, source: Path, patch: str, work: Path, *, jailed: bool) -> str:
    """The test log of `patch` on a fresh checkout of `task`'s base commit under `work`, in
    the harness's format (the markers its grading looks for)."""
    from swebench.harness import constants as c

    checkout = work / "eval"
    repos.check_out(source, task.verifier["base_commit"], checkout)
    lines: list[str] = []
    if patch.strip():
        applied = _apply(checkout, work / "model.patch", patch, fuzz=True)
        if applied is None:
            return "\n".join([*lines, c.APPLY_PATCH_FAIL])
        lines += [applied, c.APPLY_PATCH_PASS]
    reset_pytest_configuration(checkout, task.verifier["base_commit"])
    tests = files_under_test(task.verifier["test_patch"])
    existing = [t for t in tests if _tracked(checkout, t)]
    if existing:
        repos.git(checkout, "checkout", "--quiet", task.verifier["base_commit"], "--", *existing)
    if _apply(checkout, work / "test.patch", task.verifier["test_patch"], fuzz=False) is None:
        return "\n".join([*lines, c.APPLY_PATCH_FAIL, "(the test patch did not apply)"])
    output, code = _run_tests(checkout, tests, jailed=jailed)
    if code is None:
        return "\n".join([*lines, c.START_TEST_OUTPUT, output, c.TESTS_TIMEOUT])
    return "\n".join(
        [*lines, c.START_TEST_OUTPUT, output, c.END_TEST_OUTPUT, f"{c.TEST_EXIT_CODE}: {code}"]
    )


def official_report(task: Task, patch: str, log_path: Path) -> dict[str, Any]:
    """`swebench.harness.grading.get_eval_report` on the log: the instance's entry."""
    from swebench.harness.constants import EvalType
    from swebench.harness.grading import get_eval_report
    from swebench.types import TestSpec

    spec = TestSpec(
        instance_id=task.id,
        image=str(task.metadata.get("image", "")),
        eval_script_list=[],
        repo=task.verifier["repo"],
        version=task.verifier["version"],
        FAIL_TO_PASS=task.verifier["fail_to_pass"],
        PASS_TO_PASS=task.verifier["pass_to_pass"],
        log_parser=LOG_PARSER,
        eval_type=EvalType.PASS_AND_FAIL.value,
    )
    prediction = {"instance_id": task.id, "model_name_or_path": "flashrsi", "model_patch": patch}
    return get_eval_report(spec, prediction, str(log_path), include_tests_status=True)[task.id]


def require_swebench() -> None:
    try:
        import swebench.harness.grading  # noqa: F401
    except ImportError as exc:
        raise SystemicFault(
            "SWE-bench rollouts are graded by the `swebench` package, which is not installed "
            f"({exc}): install FlashRSI with its `swe-bench` extra (uv sync --extra swe-bench)"
        ) from None


def reset_pytest_configuration(checkout: Path, base: str) -> None:
    """Every pytest configuration file the model patch added, changed or deleted, as it was
    at `base` (one it added, removed): a patch cannot bring pytest hooks or options."""
    names = ["--", *(f":(glob)**/{name}" for name in PYTEST_CONFIGURATION)]
    changed = repos.git(checkout, "diff", "--name-only", "-z", "--no-renames", base, *names)
    tracked = [path for path in changed.split("\0") if path]
    if tracked:
        repos.git(checkout, "checkout", "--quiet", base, "--", *tracked)
    repos.git(checkout, "clean", "-fdxq", *names)


def _tracked(checkout: Path, path: str) -> bool:
    return bool(repos.git(checkout, "ls-files", "--", path).strip())


def _apply(checkout: Path, file: Path, patch: str, *, fuzz: bool) -> str | None:
    """Apply as the harness does; what applied it, or None when nothing could."""
    file.write_text(patch if patch.endswith("\n") else patch + "\n", encoding="utf-8")
    tries = [["git", "apply", "--verbose"], ["git", "apply", "--verbose", "--reject"]]
    if fuzz:
        tries.append(["patch", "--batch", "--fuzz=5", "-p1", "-i"])
    for command in tries:
        if command[0] == "git":
            try:
                repos.git(checkout, *command[1:], str(file))
            except subprocess.CalledProcessError:
                continue
            return " ".join(command)
        done = subprocess.run(
            [*command, str(file)], cwd=checkout, capture_output=True, timeout=60, check=False
        )
        if done.returncode == 0:
            return " ".join(command)
    return None


def _run_tests(checkout: Path, tests: list[str], *, jailed: bool) -> tuple[str, int | None]:
    """The test command's output and exit code (None when it timed out)."""
    site = site_packages(TEST_RUNTIME)
    python = os.path.realpath(sys.executable)
    argv = [python, "-B", "-m", "pytest", *PYTEST_ARGS, *tests]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(site),
        "PYTHONDONTWRITEBYTECODE": "1",
        **NO_PLUGIN_AUTOLOAD,
    }
    if not jailed:
        return _run(argv, env, checkout)
    give_to_jail_user([checkout])
    with Jail(python_runtime(TEST_RUNTIME).with_mounts(Mount(checkout, writable=True))) as jail:
        return _run(jail.enter_argv(argv, env, checkout), {"PATH": env["PATH"]}, checkout)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[str, int | None]:
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=TEST_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return out + f"\nTimeout error: {TEST_TIMEOUT:.0f} seconds exceeded", None
    return done.stdout, done.returncode
