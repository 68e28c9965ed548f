"""The local environment on its own: real namespaces, chroot and processes, no Harbor Trial."""

from __future__ import annotations

import asyncio
import io
import random
import subprocess
import tarfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from harbor.models.task.config import EnvironmentConfig, NetworkPolicy
from harbor.models.trial.paths import TrialPaths

from flashrsi_dagster.environments.local_chroot.build import BuildError
from flashrsi_dagster.environments.local_chroot.dockerfile import DockerfileError
from flashrsi_dagster.environments.local_chroot.environment import LocalChrootEnvironment
from flashrsi_dagster.environments.local_chroot.sandbox import CommandTimeout
from tests.environments.local_chroot.conftest import HOST_FROM, needs_local_env, write_task

pytestmark = needs_local_env


def make_env(tmp_path: Path, network: str = "no-network", **task) -> LocalChrootEnvironment:
    task_dir = write_task(tmp_path / "task", **task)
    trial_paths = TrialPaths(tmp_path / "trial")
    trial_paths.mkdir()
    return LocalChrootEnvironment(
        environment_dir=task_dir / "environment",
        environment_name="task",
        session_id="task__test__env",
        trial_paths=trial_paths,
        task_env_config=EnvironmentConfig(network_mode=network),
        network_policy=NetworkPolicy(network_mode=network),
        work_root=tmp_path / "work",
    )


@asynccontextmanager
async def running(env: LocalChrootEnvironment) -> AsyncIterator[LocalChrootEnvironment]:
    await env.start(force_build=False)
    try:
        yield env
    finally:
        await env.stop(delete=True)


def unique_number() -> int:
    """A number to tag this test's processes (and port), unique among concurrent runs."""
    return random.SystemRandom().randint(20000, 60000)


def host_processes(marker: str) -> list[str]:
    """Command lines of live host processes containing `marker` (zombies excluded)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != "Z":
            found.append(cmdline)
    return found


async def processes_left(marker: str) -> list[str]:
    """`host_processes(marker)` once they are gone, or after a minute: the group's SIGKILL is
    sent at the timeout or cancel, and a loaded machine takes a moment to end its members."""
    deadline = time.monotonic() + 60
    while (left := host_processes(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return left


def tar_gz(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def test_the_dockerfile_builds_the_root_and_sets_what_commands_start_with(tmp_path: Path):
    dockerfile = (
        f"{HOST_FROM}\nARG GREETING=hello\nENV APP_MODE=test\nWORKDIR /srv/app\n"
        "COPY notes.txt ./\nCOPY notes.txt /srv/app/renamed.txt\nCOPY --chmod=700 tools/ bin/\n"
        "ADD bundle.tar.gz /srv/data/\n"
        'RUN echo "$GREETING $APP_MODE $(pwd)" > built.txt\n'
    )
    archive = tmp_path / "task/environment/bundle.tar.gz"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(tar_gz({"inner/a.txt": "from tar\n"}))
    env = make_env(tmp_path, dockerfile=dockerfile, files={"notes.txt": "n\n", "tools/t.sh": "x"})

    async def scenario():
        async with running(env):
            return await env.exec(
                "pwd; echo $APP_MODE; cat built.txt notes.txt renamed.txt /srv/data/inner/a.txt;"
                " stat -c %a bin/t.sh"
            )

    result = asyncio.run(scenario())

    assert result.return_code == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == [
        "/srv/app",
        "test",
        "hello test /srv/app",
        "n",
        "n",
        "from tar",
        "700",
    ]


def test_host_folders_are_read_only_and_the_rest_belongs_to_the_trial(tmp_path: Path):
    env = make_env(tmp_path)

    async def scenario():
        async with running(env):
            return await env.exec(
                "touch /usr/evil; echo usr=$?; mkdir -p /opt/tool && echo mine > /opt/tool/x"
                " && cat /opt/tool/x; id -u"
            )

    result = asyncio.run(scenario())

    assert "Read-only file system" in result.stderr
    assert result.stdout.split() == ["usr=1", "mine", "0"]
    assert not Path("/usr/evil").exists() and not Path("/opt/tool/x").exists()


def test_a_no_network_task_sees_only_loopback_and_its_own_processes(tmp_path: Path):
    env = make_env(tmp_path)

    async def scenario():
        async with running(env):
            links = await env.exec("ip -o link show | awk -F': ' '{print $2}'")
            processes = await env.exec("ps -e -o comm=")
            return links.stdout.split(), processes.stdout.split()

    links, processes = asyncio.run(scenario())

    assert links == ["lo"]
    assert processes == ["bash", "sleep", "ps"]  # the container's PID 1 and its timer; ps


def test_background_services_outlive_their_command_but_not_the_environment(tmp_path: Path):
    env = make_env(tmp_path)
    marker = unique_number()

    async def scenario():
        async with running(env):
            started = await env.exec(
                f"nohup python3 -m http.server {marker} --bind 127.0.0.1 >/tmp/s.log 2>&1 &"
                f" for i in $(seq 50); do curl -fs 127.0.0.1:{marker} >/dev/null && break;"
                " sleep 0.1; done"
            )
            later = await env.exec(f"curl -fs 127.0.0.1:{marker}/ | head -1")
            alive = host_processes(f"http.server {marker}")
        return started, later, alive

    started, later, alive = asyncio.run(scenario())

    assert started.return_code == 0
    assert later.stdout.startswith("<!DOCTYPE HTML>")
    assert len(alive) == 1
    assert host_processes(f"http.server {marker}") == []


def test_a_timed_out_command_loses_its_whole_process_group(tmp_path: Path):
    env = make_env(tmp_path)
    tag = unique_number()

    async def scenario():
        async with running(env):
            with pytest.raises(CommandTimeout, match="timed out after 1 seconds"):
                await env.exec(f"sleep {tag} & sleep {tag}.5", timeout_sec=1)
            return await processes_left(f"sleep {tag}")

    assert asyncio.run(scenario()) == []


def test_a_cancelled_command_loses_its_whole_process_group_too(tmp_path: Path):
    env = make_env(tmp_path)
    tag = unique_number()

    async def scenario():
        async with running(env):
            with pytest.raises(TimeoutError):  # as when Harbor's agent timeout fires
                await asyncio.wait_for(env.exec(f"sleep {tag} & sleep {tag}.5"), timeout=1)
            return await processes_left(f"sleep {tag}")

    assert asyncio.run(scenario()) == []


def test_orphaned_background_processes_are_reaped(tmp_path: Path):
    env = make_env(tmp_path)

    async def scenario():
        async with running(env):
            await env.exec("(sleep 0.1 &); (sleep 0.1 &)")
            deadline = time.monotonic() + 60  # a zombie stays: never reaped, this runs out
            while time.monotonic() < deadline:
                table = (await env.exec("ps -e -o stat=,args=")).stdout.split("\n")
                if not any(line.startswith("Z") or "sleep 0.1" in line for line in table):
                    return table
                await asyncio.sleep(0.2)
            return table

    left = asyncio.run(scenario())
    assert not any(line.startswith("Z") or "sleep 0.1" in line for line in left), left


def test_a_failing_run_line_names_the_dockerfile_and_line(tmp_path: Path):
    env = make_env(tmp_path, dockerfile=f"{HOST_FROM}\nWORKDIR /app\nRUN echo nope >&2; exit 3\n")

    async def scenario():
        async with running(env):
            pass

    with pytest.raises(BuildError) as caught:
        asyncio.run(scenario())

    assert str(caught.value) == (
        f"{tmp_path}/task/environment/Dockerfile:3: RUN exited with code 3: nope"
    )


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ("apt-get update && apt-get install -y jq", "apt cannot install packages in the local"),
        ("pip install requests", "pip cannot install into the host's Python, which Debian marks"),
        ("python -c 'print(1)'", "there is no `python` command: the host's system"),
    ],
    ids=["apt-get", "pip", "python"],
)
def test_apt_pip_and_python_failures_say_what_happened(tmp_path: Path, run: str, said: str):
    env = make_env(tmp_path, dockerfile=f"{HOST_FROM}\nRUN {run}\n")

    with pytest.raises(BuildError) as caught:
        asyncio.run(env.start(force_build=False))
    asyncio.run(env.stop(delete=True))

    message = str(caught.value)
    assert message.startswith(f"{tmp_path}/task/environment/Dockerfile:2: RUN exited with code")
    assert said in message and "docker environment" in message
    assert "are you root?" not in message.partition("Its output:")[0]


def test_env_path_prepends_to_the_images_path_for_the_build_and_commands(tmp_path: Path):
    dockerfile = f'{HOST_FROM}\nENV PATH="/root/.local/bin:$PATH"\nRUN mkdir -p /app && echo ok\n'
    env = make_env(tmp_path, dockerfile=dockerfile)

    async def scenario():
        async with running(env):
            return await env.exec("mkdir -p /root/.local/bin && echo $PATH")

    result = asyncio.run(scenario())

    assert (result.return_code, result.stdout.strip()) == (
        0,
        "/root/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    )


def test_transfers_go_through_the_sandbox_not_through_agent_symlinks(tmp_path: Path):
    env = make_env(tmp_path)
    payload = tmp_path / "payload"
    payload.mkdir()
    (payload / "file.txt").write_text("uploaded")

    async def scenario():
        async with running(env):
            await env.exec(
                "ln -s / /logs/agent/root; ln -s /usr/local /app/out; echo ok > /logs/agent/a"
            )
            await env.download_dir("/logs/agent", tmp_path / "logs")
            with pytest.raises(RuntimeError, match="Read-only file system"):
                await env.upload_dir(payload, "/app/out")

    asyncio.run(scenario())

    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["a"]
    assert not Path("/usr/local/file.txt").exists()


def test_a_verification_round_sees_the_agents_processes_but_they_cannot_touch_it(
    tmp_path: Path,
):
    env = make_env(tmp_path)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text("real test\n")

    async def scenario():
        async with running(env):
            await env.exec(
                "mkdir -p /tests && echo planted > /tests/extra.sh;"
                " nohup sh -c 'while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.02; done'"
                " >/dev/null 2>&1 &"
            )
            await env.upload_dir(tests, "/tests")
            inside = await env.exec("sleep 0.2; ls /tests /logs/verifier")
            seen = await env.exec("pgrep -f 'while :; do echo 1' >/dev/null && echo found")
            verifier = await env.exec("nohup sleep 61.73 >/dev/null 2>&1 & echo started")
            await env.exec("echo 0 > /logs/verifier/reward.txt")
            await env.download_dir("/logs/verifier", tmp_path / "verifier")
            after = await env.exec("ps -e -o args= | sort | uniq")
            return inside.stdout, seen.stdout, verifier.stdout, after.stdout

    inside, seen, verifier, after = asyncio.run(scenario())

    # Only the uploaded test and no forged reward, though the writer runs and is seen (pgrep).
    assert inside.split() == ["/logs/verifier:", "/tests:", "test.sh"]
    assert (seen, verifier) == ("found\n", "started\n")
    assert (tmp_path / "verifier/reward.txt").read_text() == "0\n"
    # Back in the agent's container: its writer still running, the verifier's sleep unseen.
    assert "while :; do echo 1" in after and "sleep 61.73" not in after


def test_shell_argv_runs_a_host_process_s_commands_in_the_container(tmp_path: Path):
    env = make_env(tmp_path, dockerfile=f"{HOST_FROM}\nENV APP_MODE=demo\nWORKDIR /app\n")

    async def scenario():
        async with running(env):
            argv = env.shell_argv()
            done = subprocess.run(
                [*argv, "echo $APP_MODE $(pwd); touch /app/from-host"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            seen = await env.exec("ls /app")
            return done, seen.stdout.split()

    done, seen = asyncio.run(scenario())

    assert (done.returncode, done.stdout) == (0, "demo /app\n")
    assert seen == ["from-host"]
    with pytest.raises(RuntimeError, match="not running"):
        env.shell_argv()


def test_commands_run_as_root_only(tmp_path: Path):
    env = make_env(tmp_path)

    async def scenario():
        async with running(env):
            assert (await env.exec("id -un", user="root")).stdout == "root\n"
            with pytest.raises(ValueError, match="user 'nobody' is not supported"):
                await env.exec("id", user="nobody")

    asyncio.run(scenario())


def test_stop_deletes_the_root_unless_asked_to_keep_it(tmp_path: Path):
    kept = make_env(tmp_path / "kept")
    deleted = make_env(tmp_path / "deleted")

    async def scenario():
        for env, delete in ((kept, False), (deleted, True)):
            await env.start(force_build=False)
            await env.exec("echo data > /app/result.txt")
            await env.stop(delete=delete)

    asyncio.run(scenario())

    assert [p.name for p in (tmp_path / "deleted/work").iterdir()] == []
    (work,) = (tmp_path / "kept/work").iterdir()
    assert (work / "rootfs/app/result.txt").read_text() == "data\n"


@pytest.mark.parametrize(
    ("files", "dockerfile", "message"),
    [
        ({"docker-compose.yaml": "services: {}\n"}, None, "compose environments are not"),
        ({}, f"{HOST_FROM}\nCOPY x /usr/local/bin/x\n", "Dockerfile:2: /usr/local/bin/x is inside"),
        ({}, f"{HOST_FROM}\nWORKDIR /etc/app\n", "Dockerfile:2: /etc/app is inside /etc"),
        (
            {},
            "# a third-party task\nFROM python:3.12-slim\nRUN pip install pytest\n",
            r"^task task: .*/environment/Dockerfile:2: FROM python:3\.12-slim cannot be honoured "
            r"by the local environment: .* honours only FROM .*docker environment",
        ),
        ({}, "FROM ubuntu:99.04\n", "FROM ubuntu:99.04 cannot be honoured"),
    ],
)
def test_definitions_it_cannot_honour_are_refused_before_anything_runs(
    tmp_path: Path, files: dict[str, str], dockerfile: str | None, message: str
):
    task = {"files": {"x": "", **files}}
    if dockerfile:
        task["dockerfile"] = dockerfile
    env = make_env(tmp_path, **task)

    with pytest.raises(DockerfileError, match=message):
        asyncio.run(env.start(force_build=False))
    assert not (tmp_path / "work").exists()


def test_shared_host_folders_are_read_only_inside_and_a_planted_link_is_refused(tmp_path: Path):
    env = make_env(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "tool.txt").write_text("from the host")
    outside = tmp_path / "outside"
    outside.mkdir()

    async def scenario():
        async with running(env):
            await env.share_read_only({shared: "/flashrsi/tools"})
            seen = await env.exec("cat /flashrsi/tools/tool.txt; touch /flashrsi/tools/new")
            await env.exec(f"ln -s {outside} /planted")
            with pytest.raises(ValueError, match="symbolic link"):
                await env.share_read_only({shared: "/planted/tools"})
            with pytest.raises(ValueError, match="cannot share into '/tests/x'"):
                await env.share_read_only({shared: "/tests/x"})
            return seen

    seen = asyncio.run(scenario())

    assert seen.stdout == "from the host" and "Read-only file system" in seen.stderr
    assert sorted(p.name for p in shared.iterdir()) == ["tool.txt"]
    assert list(outside.iterdir()) == []
