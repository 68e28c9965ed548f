"""The sabotage suite's tools: scripted agents on the offline simulator, experiments run to
their end through the real framework (jail, gateway, git store), and the evidence an attack
leaves behind (tool outputs, trajectories, processes, bytes under a home)."""

from __future__ import annotations

import json
import re
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import flashrsi_dagster
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.meta_harness.plan import State
from flashrsi_dagster.algorithms.meta_harness.records import (
    EditRecord,
    Layout,
    RoundRecord,
    TestResult,
)
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.benchmarks.base import Task
from flashrsi_dagster.benchmarks.loading import load_splits
from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.environments.runtime import site_packages
from flashrsi_dagster.experiment import Experiment, open_experiment
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.records import Redactor, Status, Trajectory, read_record
from flashrsi_dagster.records.encodings import needles
from flashrsi_dagster.records.store import RecordStore
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import SnapshotStore
from tests.contamination.test_detector import TABLE, Harness, append
from tests.test_canary import _every_byte_under

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
SITE = str(site_packages())
"""The host's site-packages: an attacker reads its path off the harness's own imports."""
CORPUS = f"{SITE}/bastioncorpus/corpus/injections.jsonl"
"""The classification data, labels included (the sealed test is drawn from it)."""
PYTHON = f"{sys.base_prefix}/bin/python3"
"""The interpreter every jail shows (the harness's runtime)."""
FRAMEWORK = Path(flashrsi_dagster.__file__).resolve().parent
BUILTIN_HARNESS = HARNESS.resolve()

every_byte_under = _every_byte_under


# -- scripted agents -------------------------------------------------------------------------


def shell(command: str) -> dict:
    """A scripted reply: one call of MiniAgent's shell tool."""
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def editor(command: str, path: str, **arguments: str) -> dict:
    """A scripted reply: one call of MiniAgent's editor tool (`str_replace`, `create`, …)."""
    arguments = {"command": command, "path": path, **arguments}
    return {"tool_calls": [{"name": "editor", "arguments": arguments}]}


def say(text: str = "done") -> dict:
    """A scripted reply that ends the agent's run."""
    return {"text": text}


def unique(tag: str) -> str:
    """A name no other test (here or in another worktree on this machine) uses."""
    return f"{tag}-{uuid.uuid4().hex[:10]}"


def script_model(name: str, replies: list[dict] | None = None) -> str:
    """The model id serving `replies` in order; they may be given later (same name)."""
    offline_server().add_script(name, replies or [say()])
    return f"simulator/script:{name}"


def sleep_args(count: int) -> list[str]:
    """`sleep` durations that name this test's processes only: 97x seconds and a unique
    fraction, so `alive()` cannot confuse them with another test's sleepers (nor theirs
    with ours: the jail tests look for `sleep 90x`)."""
    tag = uuid.uuid4().int % 10**8
    return [f"97{n}.{tag:08d}" for n in range(count)]


# -- experiments -----------------------------------------------------------------------------


def config(home: Path, *overrides: str, example: Path = EXAMPLE) -> ExperimentConfig:
    """An offline Meta-Harness example, small: three tasks per split at most, one rollout at
    a time (a script hands out its replies in request order)."""
    base = ["--experiment.home", str(home), "--benchmark.limit", "3"]
    return load_config(example, [*base, "--benchmark.concurrency", "1", *overrides])


@dataclass
class Finished:
    """An experiment run to its end, and what the tests read from its records."""

    harness: MetaHarness
    state: State

    @property
    def experiment(self) -> Experiment:
        return self.harness.experiment

    @property
    def layout(self) -> Layout:
        return self.harness.layout

    @property
    def home(self) -> Path:
        home = self.experiment.config.experiment.home
        assert home is not None
        return home

    def edit(self, k: int) -> EditRecord:
        return read_record(self.layout.edit(k), EditRecord)

    def round(self, k: int) -> RoundRecord:
        return read_record(self.layout.round(k), RoundRecord)

    def test_result(self) -> TestResult:
        return read_record(self.layout.test, TestResult)

    def worker(self, k: int) -> dict:
        return json.loads(self.layout.worker(k).read_text())

    def worker_outputs(self, k: int) -> list[str]:
        """The Worker's tool outputs in step k, in order."""
        return [m["content"] for m in self.worker(k)["messages"] if m["role"] == "tool"]

    def dev(self, k: int) -> list[Trajectory]:
        return RolloutRecord(self.layout.rollouts(k), self.experiment.redactor).load()

    def tested(self) -> list[Trajectory]:
        return RolloutRecord(self.layout.test_rollouts, self.experiment.redactor).load()

    def test_tasks(self) -> tuple[Task, ...]:
        """The sealed split (the search never holds it: drawn again here, as the test is)."""
        return load_splits(self.experiment.config.benchmark, self.harness.benchmark).unseal_test()


def start(config: ExperimentConfig) -> MetaHarness:
    """The experiment opened, its gateway listening (so its port is known to attackers)."""
    harness = MetaHarness(open_experiment(config), log=lambda _: None)
    assert harness.experiment.confinement.gateway is not None
    return harness


def one_step(home: Path, worker: str, *overrides: str) -> MetaHarness:
    """An experiment of one round of one candidate, written by the scripted Worker `worker`
    (`script_model`), opened (`start`); `overrides`: more command-line settings."""
    return start(
        config(
            home,
            "--algorithm.max_steps",
            "1",
            "--algorithm.candidates_per_round",
            "1",
            "--algorithm.worker.llm.model",
            script_model(worker),
            *overrides,
        )
    )


def finish(harness: MetaHarness) -> Finished:
    return Finished(harness, harness.run())


def mean_score(trajectories: list[Trajectory]) -> float:
    return sum(t.score or 0.0 for t in trajectories) / len(trajectories)


def port_of(url: str) -> int:
    match = re.search(r":(\d+)", url.rsplit("//", 1)[-1])
    assert match is not None, url
    return int(match.group(1))


# -- a finished experiment beside the attacked one -------------------------------------------


def plant_finished(home: Path, name: str, test_tasks: tuple[Task, ...]) -> Path:
    """Another experiment's folder as a finished run leaves it: a snapshot store, round and
    sealed-test records whose rollouts hold every test task (text and expected label)."""
    root = home / name
    SnapshotStore(root / "snapshots").create_seed(BUILTIN_HARNESS)
    records = Layout.of(root / "records")
    store = RecordStore(root, Redactor(environ={}))
    rollouts = RolloutRecord(records.test_rollouts, store)
    for task in test_tasks:
        rollouts.append(
            Trajectory(
                task_id=task.id,
                split="test",
                snapshot_id="0" * 40,
                status=Status.SUCCESS,
                score=1.0,
                messages=[{"role": "user", "content": task.instruction}],
                metadata={"expected": task.verifier["label"]},
            )
        )
    result = TestResult(snapshot_id="0" * 40, test_score=1.0, test_tasks=len(test_tasks))
    store.write(records.test, result)
    return root


def files_digest(root: Path) -> dict[str, bytes]:
    """Every file under `root` and its bytes: to show nothing was changed."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


# -- evidence --------------------------------------------------------------------------------


def fingerprints(tasks: tuple[Task, ...]) -> dict[str, list[bytes]]:
    """What would betray each task: its id, and the longest plain run of its text (long
    enough to be unique, and written the same way in JSON, git blobs or a shell's output)."""
    out = {}
    for task in tasks:
        text = task.instruction.rpartition("Text: ")[2]
        run = max(re.findall(r"[A-Za-z0-9 ,]{12,}", text), key=len, default=text)
        out[task.id] = [task.id.encode(), run.strip().encode()]
    return out


def leaked_tasks(data: bytes, tasks: tuple[Task, ...]) -> list[str]:
    """The tasks of which anything is found in `data`."""
    return [tid for tid, marks in fingerprints(tasks).items() if any(m in data for m in marks)]


def secret_forms(secret: str) -> dict[bytes, str]:
    """The secret plain, and in every simple encoding the framework's own scanner knows
    (base64 at each offset, hex, URL encoding, reversed)."""
    return needles(secret.encode())


def found_secret(data: bytes, secret: str) -> list[str]:
    return sorted({name for needle, name in secret_forms(secret).items() if needle in data})


def alive(*tokens: str) -> list[str]:
    """Command lines of live (not zombie) host processes holding any of `tokens`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(token in argv for token in tokens):
            found.append(f"{proc.name}: {argv}")
    return found


def section(messages: list[dict], label: str) -> str:
    """The text a probe reported under `== <label>` (see target_probes.py)."""
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, str) and content.startswith(f"== {label}\n"):
            return content.split("\n", 1)[1]
    raise AssertionError(f"no `== {label}` report in the trajectory")


# -- answer tables, as a Worker that memorised the corpus writes them ------------------------


def refused_as_opaque(verdict) -> bool:
    """Refused by the coverage rule alone (`contamination/coverage.py`): no evidence, and
    every rule an opaque stretch of bytes (the decoding budget not spent on it)."""
    rules = verdict.rules
    return bool(rules) and not verdict.hits and all("opaque bytes at offset" in r for r in rules)


def table_rows(count: int = 12) -> list[tuple[str, str]]:
    """The first `count` rows of the built-in corpus: (text, label)."""
    return list(TABLE.items())[:count]


def answer_table(key, literal=repr) -> str:
    """A Python table of twelve rows, each text written by `key`, as `literal` prints it."""
    rows = "".join(f"    {literal(key(t))}: {label!r},\n" for t, label in table_rows())
    return "TABLE = {\n" + rows + "}\n"


def judged(check: Harness, content: str, path: str = "runtime/table.py"):
    """The contamination check's verdict on the seed with `content` appended to `path`."""
    return check.judge(append(path, content))
