"""Two hosts over one PostgreSQL and one experiment home, simulated on this machine: each a pid
namespace of its own (its own pids, so its own process space: `scratch.process_space`) with
its own temp folder, the network, the database and the home shared. Each host's `flashrsi
run` launches its own experiment's runs on itself; one host is killed mid-round (its whole
namespace, as a host that loses power), and the other finishes its experiment with the final
state of an uninterrupted run: the killed host's runs are failed once their heartbeats stop,
its queued runs taken over, and no step is lost or done twice."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg2
import pytest

from tests.conftest import PATIENCE, wait_until
from tests.deployment.test_kill_resume import FLASHRSI, _args, _outcome, uninterrupted
from tests.postgres import fresh_database, needs_postgres, rows

NAMESPACES = os.geteuid() == 0 and all(shutil.which(c) for c in ("unshare", "nsenter"))
SPACE = "from flashrsi_dagster import scratch; print(scratch.process_space())"
SILENT = 30
"""Seconds without a heartbeat after which the resume takes the killed host's runs for dead:
`owner.SILENT_FOR` (120, room for hosts' clocks that differ) lowered for the resume alone,
the two hosts here sharing one clock. Its runs beat every `owner.BEAT` seconds until the
kill; the bound's own value is `tests/orchestration/test_owner.py`'s. (At 120 the resume
waited two minutes for them, most of this test's time.)"""
RESUME = f"""
import sys
from flashrsi_dagster.cli import main
from flashrsi_dagster.orchestration import owner
owner.SILENT_FOR = {SILENT}
sys.argv[0] = "flashrsi"  # how the experiment's lock names its holder
sys.exit(main(sys.argv[1:]))
"""
"""`flashrsi` (argv[1:]) with the heartbeats' bound at `SILENT`."""


class Host:
    """A host of its own on this machine: a pid namespace whose first process sleeps until
    the host is killed; commands are entered into it (`nsenter`). Killing that first process
    makes the kernel kill every process of the namespace at once."""

    def __init__(self, env: dict[str, str]) -> None:
        # a host's /tmp is its own; short, as a host's is: a forkserver's socket lives there,
        # and a UNIX socket's path is at most 107 bytes (pytest's tmp_path can exceed it)
        self.tmp = Path(tempfile.mkdtemp(prefix="host-", dir="/tmp"))
        self.env = {**env, "TMPDIR": str(self.tmp)}
        argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL"]
        self.leader = subprocess.Popen([*argv, "sleep", "infinity"], start_new_session=True)
        children = Path(f"/proc/{self.leader.pid}/task/{self.leader.pid}/children")
        wait_until(lambda: children.read_text().strip(), "the namespace's first process")
        self.init = int(children.read_text().split()[0])

    def popen(self, *argv: str) -> subprocess.Popen:
        enter = ["nsenter", "--target", str(self.init), "--pid", "--mount"]
        return subprocess.Popen(
            [*enter, *argv], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip

    def run(self, *argv: str, timeout: float = 900) -> tuple[int, str]:
        command = self.popen(*argv)
        out, _ = command.communicate(timeout=timeout)
        return command.returncode, out

    def space(self) -> str:
        code, out = self.run(sys.executable, "-c", SPACE, timeout=PATIENCE)
        assert code == 0, out
        return out.strip()

    def kill(self) -> None:
        if self.leader.poll() is None:
            os.kill(self.init, signal.SIGKILL)
            self.leader.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _spaces(url: str, name: str, status: str | None = None) -> set[str]:
    """The process spaces the runs of experiment `name` ran in (`status`: only those): their
    worker's, or where it has not tagged the run yet, the space of the process that launched
    it (its worker runs there: the launcher's code server forks it)."""
    where = f"and r.status = '{status}'" if status else ""
    found = rows(
        url,
        "select coalesce(p.value, l.value) from runs r"
        " join run_tags e on e.run_id = r.run_id and e.key = 'flashrsi/experiment'"
        " left join run_tags p on p.run_id = r.run_id and p.key = 'flashrsi/process'"
        " left join run_tags l on l.run_id = r.run_id and l.key = 'flashrsi/launcher'"
        f" where e.value = '{name}' {where}",
    )
    return {value.partition(":")[0] for (value,) in found if value}


def _candidate_runs(url: str, name: str) -> bool:
    """Whether the second candidate of a round of `name` runs now, its worker started (so the
    round's candidates are in flight together)."""
    try:
        return bool(_second_candidate_started(url, name))
    except psycopg2.errors.UndefinedTable:  # the instance not made yet
        return False


def _second_candidate_started(url: str, name: str) -> list[tuple]:
    return rows(
        url,
        "select r.run_id from runs r"
        " join run_tags e on e.run_id = r.run_id and e.key = 'flashrsi/experiment'"
        " join run_tags p on p.run_id = r.run_id and p.key = 'flashrsi/process'"
        " join run_tags k on k.run_id = r.run_id and k.key = 'dagster/run_key'"
        f" where e.value = '{name}' and r.status = 'STARTED' and k.value like '%.c1'",
    )


def _statuses(
    url: str, name: str, among: tuple[str, ...] = (), run_ids: dict | None = None
) -> dict[str, str]:
    """Run id -> status of experiment `name`'s runs (with a status `among`; of `run_ids`)."""
    found = rows(
        url,
        "select r.run_id, r.status from runs r"
        " join run_tags e on e.run_id = r.run_id and e.key = 'flashrsi/experiment'"
        f" where e.value = '{name}'",
    )
    return {
        run_id: status
        for run_id, status in found
        if (not among or status in among) and (run_ids is None or run_id in run_ids)
    }


def _twice_succeeded(url: str, name: str) -> list[tuple]:
    """Run keys of experiment `name` with more than one successful run."""
    return rows(
        url,
        "select k.value, count(*) from runs r"
        " join run_tags e on e.run_id = r.run_id and e.key = 'flashrsi/experiment'"
        " join run_tags k on k.run_id = r.run_id and k.key = 'dagster/run_key'"
        f" where e.value = '{name}' and r.status = 'SUCCESS'"
        " group by k.value having count(*) > 1",
    )


@pytest.fixture
def reference(tmp_path_factory, worker_id) -> Path:
    """The home of the same settings run to their end on one host, the one
    `test_kill_resume.py` compares with (made once per run; its experiment has another name,
    which the outcome does not hold)."""
    return uninterrupted(tmp_path_factory, worker_id, "meta_harness") / "home"


@pytest.mark.slow
@needs_postgres
@pytest.mark.skipif(not NAMESPACES, reason="hosts as pid namespaces need root, unshare, nsenter")
def test_each_host_launches_its_own_runs_and_a_killed_hosts_experiment_ends_as_uninterrupted(
    tmp_path, reference
):
    home = tmp_path / "shared" / "home"
    with fresh_database() as url:
        env = {**os.environ, "FLASHRSI_POSTGRES_URL": url}
        a, b = Host(env), Host(env)
        try:
            space_a, space_b = a.space(), b.space()
            assert space_a != space_b
            run = [FLASHRSI, "run", *_args("meta_harness", home), "--experiment.name"]
            left, right = a.popen(*run, "left"), b.popen(*run, "right")
            wait_until(
                lambda: right.poll() is not None or _candidate_runs(url, "right"),
                "right's candidates run",
                1800,
            )
            assert right.poll() is None, right.communicate()[0]  # not ended before its round
            b.kill()  # mid-round: a candidate's run worker on b, the others started or queued
            printed_right = right.communicate()[0]
            assert _spaces(url, "right") == {space_b}, printed_right
            # a candidate's run makes many model calls after it starts (load only lengthens
            # them): it was killed in progress, and nothing of b changes its record any more
            stranded = _statuses(url, "right", ("STARTING", "STARTED"))
            assert stranded, printed_right

            printed_left = left.communicate(timeout=900)[0]
            assert left.returncode == 0, printed_left
            assert _spaces(url, "left") == {space_a}, printed_left  # none launched on b

            resume = ["resume", "--experiment", "right", "--home", str(home)]
            code, resumed = a.run(sys.executable, "-c", RESUME, *resume)
            assert code == 0, printed_right + resumed
            assert "marked failed" in resumed, resumed  # b's runs, once their heartbeat stopped
            assert set(_statuses(url, "right", run_ids=stranded).values()) == {"FAILURE"}
            assert _statuses(url, "right", ("QUEUED", "STARTING", "STARTED")) == {}, resumed
            assert _spaces(url, "right", "SUCCESS") <= {space_a, space_b}
            assert _twice_succeeded(url, "right") == [], resumed
            assert _outcome(home, "right") == _outcome(reference), resumed

            code, again = a.run(FLASHRSI, "resume", "--experiment", "right", "--home", str(home))
            assert code == 0 and "== " not in again, again  # nothing left: no step runs twice
        finally:
            a.kill()
            b.kill()
