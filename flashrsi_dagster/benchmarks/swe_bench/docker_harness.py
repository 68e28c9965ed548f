"""An instance's environment as a Docker image built here, and a patch evaluated in it by the
`swebench` package's own harness (`swebench.harness.run_evaluation.run_instance`: the container,
the patch applied with its `git apply` / `patch` chain, the eval script, the log, and
`get_eval_report` on it).

The image is what the official harness runs an instance in (`/testbed` holding the repository
at `base_commit`, the tests' runtime installed), built from a Dockerfile on a base made here
where no registry is reachable (`images.task_bases`: `debian:bookworm-slim` from Debian's
archive) with the runtime from Debian's packages, and named as the harness names a locally built
instance image (`sweb.eval.x86_64.<instance id>:latest`). It is built with `docker build
--network host`, not with the harness's own image builder: that one runs `docker buildx build`
on the engine's default network, and this machine has neither the buildx plugin nor a bridge
network, so a `RUN apt-get` there reaches no archive. Its official per-repository images need
a registry (the published `swebench/sweb.eval.*`) or GitHub and the repositories' own package
indexes (the task repository's Dockerfiles); neither is reachable here.

The eval script is the harness's shape for a pytest repository: the test patch's files reset
to `base_commit`, the test patch applied, those files' tests run between the harness's markers.
An empty patch is evaluated as the harness's no-patch mode (`skip_patch`), as it checks that an
instance's tests fail without a fix; the harness itself counts an empty prediction unresolved
without running it.

Rollouts grade in the local environment (`evaluation`: the same steps and grading, the tests on
this machine's Python); this module is the Docker path: an instance set's images built once, a
prediction graded in its instance's image (`python -m
flashrsi_dagster.benchmarks.swe_bench.docker_harness DATA`: every gold patch, or the patches of
a predictions file).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from flashrsi_dagster.benchmarks.base import BenchmarkError, Task
from flashrsi_dagster.benchmarks.swe_bench import repos
from flashrsi_dagster.benchmarks.swe_bench.evaluation import (
    LOG_PARSER,
    NO_PLUGIN_AUTOLOAD,
    PYTEST_ARGS,
    PYTEST_CONFIGURATION,
    files_under_test,
    require_swebench,
)
from flashrsi_dagster.benchmarks.swe_bench.instances import read_instances
from flashrsi_dagster.images.engine import ImageError, docker
from flashrsi_dagster.scratch import process_dir, scratch_dir

ENVIRONMENT_BASE = "debian:bookworm-slim"
"""The instance images' base: made here by `images.task_bases` where no registry is reachable."""
PACKAGES = ("git", "patch", "python3", "python3-pytest")
"""The tests' runtime (python3 and pytest) and what the harness runs in the container."""
EVAL_TIMEOUT = 1800
"""Seconds the eval script may run (the harness's default)."""
RUN_ID = "flashrsi"
_HEREDOC = "EOF_114329324912"  # the harness's own delimiter for a patch in its eval scripts
_TIMED_OUT = "Test timed out after"
"""What `run_instance` logs where the tests outlived `EVAL_TIMEOUT` (the patch's doing)."""
_log_dir_lock = threading.Lock()


def dockerfile(base: str = ENVIRONMENT_BASE) -> str:
    return (
        f"FROM {base}\n"
        "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
        f"--no-install-recommends {' '.join(PACKAGES)} && rm -rf /var/lib/apt/lists/*\n"
        "COPY testbed /testbed\n"
        "WORKDIR /testbed\n"
        # the harness's container runs `tail -f /dev/null` as its first process, which a
        # SIGTERM does not end: its `docker stop --time=15` would wait 15 s for each instance
        "STOPSIGNAL SIGKILL\n"
    )


def require_base() -> None:
    """The instance images' base in the engine, made first where it lacks it (`ImageError`
    naming what is missing: no Docker CLI, no engine, no way to make the base)."""
    from flashrsi_dagster.images.task_bases import ensure_task_base_images

    docker("info", "--format", "{{.ServerVersion}}", timeout=60)
    ensure_task_base_images((ENVIRONMENT_BASE,))


def image_spec(task: Task, base: str = ENVIRONMENT_BASE):
    """The harness's `ImageSpec` for `task`'s image built here (no registry namespace)."""
    from swebench.image_builder.image_spec import ImageSpec

    return ImageSpec(instance_id=task.id, dockerfile=dockerfile(base), namespace=None)


def build_instance_image(task: Task, source: Path, base: str = ENVIRONMENT_BASE) -> str:
    """`task`'s image (its repository, from `source`, at `base_commit` in `/testbed`), built
    on `base`, which the engine must have; its tag. The engine's cache keeps the runtime layer,
    shared by every instance, and the repository's layer, shared by those of one commit."""
    spec = image_spec(task, base)
    with scratch_dir("swe-image-") as context:
        repos.check_out(source, task.verifier["base_commit"], context / "testbed")
        (context / "Dockerfile").write_text(spec.dockerfile, encoding="utf-8")
        docker("build", "--network", "host", "--tag", spec.name, str(context))
    return spec.name


def eval_script(task: Task) -> str:
    """The harness's eval script for a pytest repository (its markers, its heredoc)."""
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT

    base = task.verifier["base_commit"]
    tests = " ".join(files_under_test(task.verifier["test_patch"]))
    test_patch = task.verifier["test_patch"].rstrip("\n")
    # the patch's pytest configuration reset as `evaluation.reset_pytest_configuration` does
    config = " ".join(f"':(glob)**/{name}'" for name in PYTEST_CONFIGURATION)
    env = " ".join(f"{k}={v}" for k, v in NO_PLUGIN_AUTOLOAD.items())
    return "\n".join(
        [
            "#!/bin/bash",
            "set -uxo pipefail",
            "cd /testbed",
            "git config --global --add safe.directory /testbed",
            "git status",
            f"git -c core.fileMode=false diff {base}",
            f"git diff --name-only -z --no-renames {base} -- {config}"
            f" | xargs -0 -r git checkout {base} --",
            f"git clean -fdxq -- {config}",
            f"git checkout {base} {tests}",
            f"git apply -v - <<'{_HEREDOC}'\n{test_patch}\n{_HEREDOC}",
            f": '{START_TEST_OUTPUT}'",
            f"{env} python3 -m pytest {' '.join(PYTEST_ARGS)} {tests}",
            f": '{END_TEST_OUTPUT}'",
            f"git checkout {base} {tests}",
        ]
    )


def instance_spec(task: Task, image: str):
    """The harness's `TestSpec`, made by its own `make_test_spec` from an instance record."""
    from swebench.harness.constants import EvalType
    from swebench.harness.utils import make_test_spec

    return make_test_spec(
        {
            "instance_id": task.id,
            "image": image,
            "eval_script": eval_script(task),
            "repo": task.verifier["repo"],
            "version": task.verifier["version"],
            "FAIL_TO_PASS": task.verifier["fail_to_pass"],
            "PASS_TO_PASS": task.verifier["pass_to_pass"],
            "log_parser": LOG_PARSER,
            "eval_type": EvalType.PASS_AND_FAIL.value,
        }
    )


def evaluate(task: Task, patch: str, image: str, log_dir: Path) -> dict[str, Any]:
    """`patch` on `task` in `image`, by `run_instance`: the instance's report (`resolved`, the
    per-test outcomes), or `{"resolved": False, "error": ...}` where the harness refused the
    patch (it did not apply, or the tests timed out: its log's end). Its logs go under
    `log_dir/flashrsi/flashrsi/<instance id>`. `HarnessError` where the harness itself failed
    (the engine, the container): nothing about the patch is known.

    Each call is its own harness run (a run id of its own): the harness names the container
    and its log folder after it, and returns a report it finds in that folder instead of
    evaluating again, so calls for one instance can run side by side."""
    require_swebench()
    import docker as docker_client
    from swebench.harness import run_evaluation as harness

    run_id, root = f"{RUN_ID}-{uuid.uuid4().hex[:12]}", _log_root(harness)
    prediction = {"instance_id": task.id, "model_name_or_path": RUN_ID, "model_patch": patch}
    client = docker_client.from_env(timeout=harness.DOCKER_CLIENT_TIMEOUT)
    try:
        done = harness.run_instance(
            instance_spec(task, image),
            prediction,
            client,
            run_id,
            timeout=EVAL_TIMEOUT,
            skip_patch=not patch.strip(),
        )
    finally:
        client.close()
        _move_logs(root / run_id, log_dir / RUN_ID)
    if done is None:
        log = log_dir / RUN_ID / RUN_ID / task.id / "run_instance.log"
        said = log.read_text(errors="replace")[-2000:] if log.is_file() else "(no log)"
        if _patch_refused(said):
            return {"resolved": False, "error": said}
        raise HarnessError(f"swebench's harness could not evaluate {task.id}: {said[-600:]}")
    return done[1][task.id]


class HarnessError(RuntimeError):
    """The harness failed on its own side (engine, container, copy), not on the patch."""


def _patch_refused(log: str) -> bool:
    """Whether the harness's log ends on the patch's own failure (it did not apply, or the
    tests timed out), not on the harness's (the engine, the container, a copy)."""
    from swebench.harness.constants import APPLY_PATCH_FAIL

    return APPLY_PATCH_FAIL in log or _TIMED_OUT in log


def graded_log(log_dir: Path, task: Task) -> Path:
    """Where `evaluate(task, ..., log_dir)` left the tests' output (the file it grades)."""
    return log_dir / RUN_ID / RUN_ID / task.id / "test_output.txt"


def _log_root(harness) -> Path:
    """The harness writes under `RUN_EVALUATION_LOG_DIR`, a module constant it reads at each
    call (relative to the working folder by default): pointed once at this process's scratch
    folder; each call's logs are moved out of it when the call ends."""
    with _log_dir_lock:
        root = process_dir() / "swebench-logs"
        if root != harness.RUN_EVALUATION_LOG_DIR:
            root.mkdir(exist_ok=True)
            harness.RUN_EVALUATION_LOG_DIR = root
        return root


def _move_logs(source: Path, target: Path) -> None:
    if not source.is_dir():
        return
    target.mkdir(parents=True, exist_ok=True)
    for part in source.iterdir():
        shutil.rmtree(target / part.name, ignore_errors=True)
        shutil.move(part, target / part.name)
    shutil.rmtree(source, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m " + __spec__.name, description=__doc__)
    parser.add_argument("data", type=Path, help="instance records, `repos/` beside them")
    parser.add_argument("--predictions", type=Path, help="JSONL of instance_id, model_patch")
    parser.add_argument("--logs", type=Path, default=Path("logs/run_evaluation"))
    args = parser.parse_args(argv)
    folder = args.data if args.data.is_dir() else args.data.parent
    try:
        tasks = read_instances(args.data)
    except BenchmarkError as exc:
        sys.exit(f"error: {exc}")
    if problems := repos.missing(tasks, [folder]):
        sys.exit("\n".join(f"error: {problem}" for problem in problems))
    patches = {t.id: t.verifier["gold_patch"] for t in tasks}
    if args.predictions:
        rows = [json.loads(line) for line in args.predictions.read_text().splitlines() if line]
        patches = {row["instance_id"]: row["model_patch"] or "" for row in rows}
    try:
        require_base()
        for task in (t for t in tasks if t.id in patches):
            source = repos.find_source(task.verifier["repo"], [folder])
            report = evaluate(task, patches[task.id], build_instance_image(task, source), args.logs)
            print(json.dumps({"instance_id": task.id, "resolved": report["resolved"]}))
    except (ImageError, HarnessError) as exc:
        sys.exit(f"error: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
