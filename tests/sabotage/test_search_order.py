"""Red team on the search's order: promotion, the sealed test and the rounds asked for out of
turn, twice at once, or under another name — through the engine (`MetaHarness`, as every
host calls it), through Dagster runs launched the way the UI launches them, and through the
driver and the start job. Each test names the rule that must hold; each one that found a hole
failed first and was then made to pass by a fix of its own.

Two processes of one experiment are played by two `MetaHarness` objects opened on the same
folder, each in its own thread: they share nothing but the files, as two Dagster runs do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.base import StepOrderError
from flashrsi_dagster.algorithms.meta_harness.defs.assets import PARTITIONS
from flashrsi_dagster.algorithms.meta_harness.plan import State, next_step, rank
from flashrsi_dagster.algorithms.meta_harness.records import Layout, Promotion, RoundRecord
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.experiment import ConfigChangedError, open_experiment
from flashrsi_dagster.orchestration.algorithm_defs import defs_for, run_key
from flashrsi_dagster.orchestration.context import DRIVER_TAG, EXPERIMENT_TAG
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from flashrsi_dagster.records import Status
from tests.conftest import needs_jails
from tests.dagster_instances import instance_on
from tests.sabotage.helpers import files_digest

pytestmark = needs_jails

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
MH = defs_for("meta_harness")


def _config(home: Path, steps: int = 1, *more: str):
    overrides = ["--experiment.home", str(home), "--benchmark.limit", "3"]
    return load_config(EXAMPLE, [*overrides, "--algorithm.max_steps", str(steps), *more])


def _open(home: Path, steps: int = 1) -> MetaHarness:
    """The experiment's algorithm as one process (one Dagster run) opens it."""
    experiment = open_experiment(_config(home, steps))
    return open_algorithm(experiment, log=lambda _: None)  # type: ignore[return-value]


class _Benchmark:
    """The real benchmark, with a hook before the first rollout of one split (and every
    answer marked wrong, if `zero`)."""

    def __init__(self, benchmark, *, split: str = "", before: Callable[[], None] | None = None):
        self.inner, self.name = benchmark, benchmark.name
        self.split, self.before = split, before
        self.rollouts: list[str] = []
        self.zero = False

    def rollout(self, agent, task, *, split, attempt):
        self.rollouts.append(split)
        if split == self.split and self.before is not None:
            before, self.before = self.before, None
            before()
        real = self.inner.rollout(agent, task, split=split, attempt=attempt)
        if self.zero:
            return real.model_copy(update={"score": 0.0, "status": Status.FAILURE})
        return real

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _Meanwhile:
    """Another process's step, started now in a thread: `wait()` returns once it has
    finished, or once it has spent `grace` seconds without starting its work (`started`,
    set by the test's hook) — that is, it waits its turn."""

    def __init__(self, step: Callable[[], object], started: threading.Event) -> None:
        self.started, self.result, self.error = started, None, None
        self.thread = threading.Thread(target=self._run, args=(step,), daemon=True)
        self.thread.start()

    def _run(self, step) -> None:
        try:
            self.result = step()
        except BaseException as exc:  # reported by `joined`
            self.error = exc

    def wait(self, grace: float = 2.0) -> None:
        self.thread.join(grace)
        if self.started.is_set():
            self.thread.join()

    def joined(self):
        self.thread.join(300)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.result


def _signal_on(obj, method: str, started: threading.Event) -> None:
    """Set `started` when `obj.method` is first called (the other process begins its work)."""
    real = getattr(obj, method)

    def hooked(*args, **kwargs):
        started.set()
        return real(*args, **kwargs)

    setattr(obj, method, hooked)


# -- 1. promotion asked for while a round has no result ---------------------------------------


def test_a_promotion_asked_for_while_a_round_is_being_re_evaluated_is_refused_and_writes_nothing(
    tmp_path,
):
    """Rematerializing a round first sets its old result aside; a promotion asked for in
    that window (the finalize job launched from the UI meanwhile, or after the re-evaluation
    failed) would rank the rounds without it."""
    harness = _open(tmp_path / "home")
    harness.run(until="sealed_test")
    harness.restart_round(1)  # round 1 set aside, its re-evaluation not done yet
    before = files_digest(harness.layout.folder)

    with pytest.raises(StepOrderError, match=r"promotion refused: .*round\(s\) 1 of 0\.\.1"):
        harness.promote()
    with pytest.raises(StepOrderError, match="the sealed test refused"):
        harness.sealed_test()

    assert files_digest(harness.layout.folder) == before
    harness.finish_round(1)
    assert harness.next().action == "sealed_test"  # the same ranking: the promotion holds
    harness.close()


def test_the_sealed_test_refuses_a_stale_promotion_and_writes_nothing(tmp_path):
    """The promoted round re-evaluated lower before the test: the test of the old choice is
    refused until the rounds are ranked again (the finalize job's sealed-test selection)."""
    harness = _open(tmp_path / "home")
    harness.run(until="sealed_test")
    promoted = harness.read_state().promotion
    harness.benchmark = _Benchmark(harness.benchmark)
    harness.benchmark.zero = True
    harness.evaluate_round(promoted.round, again=True)
    before = files_digest(harness.layout.folder)

    with pytest.raises(StepOrderError, match="the promotion is missing or stale"):
        harness.sealed_test()

    assert files_digest(harness.layout.folder) == before
    assert "test" not in harness.benchmark.rollouts
    assert harness.next().action == "promote"
    harness.close()


# -- 2. two steps of one experiment at once ---------------------------------------------------


def test_a_second_sealed_test_launched_while_the_first_runs_does_not_evaluate_the_test_again(
    tmp_path,
):
    first = _open(tmp_path / "home")
    first.run(until="sealed_test")
    second = _open(tmp_path / "home")
    started = threading.Event()
    _signal_on(second, "score", started)
    counted = second.benchmark = _Benchmark(second.benchmark)
    meanwhile: list[_Meanwhile] = []

    def launch_the_second():
        meanwhile.append(_Meanwhile(second.sealed_test, started))
        meanwhile[0].wait()

    first.benchmark = _Benchmark(first.benchmark, split="test", before=launch_the_second)
    result = first.sealed_test()
    again = meanwhile[0].joined()

    tasks = result.test_tasks
    assert first.benchmark.rollouts.count("test") + counted.rollouts.count("test") == tasks
    assert again == result == first.read_state().test
    lines = first.layout.test_rollouts.read_text().splitlines()
    assert len(lines) == tasks  # one rollout per test task, in one record
    first.close()
    second.close()


def test_a_round_re_evaluated_during_the_sealed_test_cannot_change_the_promotion_it_tests(
    tmp_path,
):
    tester = _open(tmp_path / "home")
    tester.run(until="sealed_test")
    promoted = tester.read_state().promotion
    other = _open(tmp_path / "home")
    other.benchmark = _Benchmark(other.benchmark)
    other.benchmark.zero = True  # the promoted round scores 0 when evaluated again
    started = threading.Event()
    _signal_on(other.experiment.records, "move", started)  # restart_round's first write
    meanwhile: list[_Meanwhile] = []

    def rematerialize_and_promote():
        other.evaluate_round(promoted.round, again=True)
        return other.promote()

    def launch_the_other():
        meanwhile.append(_Meanwhile(rematerialize_and_promote, started))
        meanwhile[0].wait()

    tester.benchmark = _Benchmark(tester.benchmark, split="test", before=launch_the_other)
    tested = tester.sealed_test()
    meanwhile[0].joined()

    state = tester.read_state()
    assert state.test == tested
    assert state.promotion.snapshot_id == tested.snapshot_id == promoted.snapshot_id
    assert state.promotion.created <= state.test.created  # the test is of the promotion as is
    assert tester.next().action == "done"
    tester.close()
    other.close()


def test_two_runs_of_one_round_at_once_run_the_worker_once(tmp_path):
    first = _open(tmp_path / "home")
    first.evaluate_seed()
    second = _open(tmp_path / "home")
    started = threading.Event()
    _signal_on(second, "_worker_step", started)
    workers: list[int] = []
    real_step = first._worker_step
    meanwhile: list[_Meanwhile] = []

    def first_worker(k, edit_dir, instruction, *rest):
        meanwhile.append(_Meanwhile(lambda: second.propose(k), started))
        meanwhile[0].wait()
        workers.append(k)
        return real_step(k, edit_dir, instruction, *rest)

    first._worker_step = first_worker
    record = first.propose(1)
    other = meanwhile[0].joined()

    assert workers == [1] and not started.is_set()  # the second read the first's edit back
    assert other.snapshot_id == record.snapshot_id
    assert [s.parent_id is None for s in first.experiment.snapshots.history()].count(False) == 1
    first.close()
    second.close()


def test_a_config_cannot_be_swapped_under_a_step_that_has_not_written_a_rollout_yet(tmp_path):
    """A changed config may replace an experiment's while no rollout ran (`flashrsi run`
    with the same name). While the seed's first rollout is still running, that would leave
    round 0 measured on the old dev split and every later round on the new one."""
    harness = _open(tmp_path / "home")
    meta = harness.experiment.paths.run_meta
    before = meta.read_bytes()
    changed = _config(tmp_path / "home", 1, "--benchmark.seed", "7")
    meanwhile: list[_Meanwhile] = []

    def reopen_with_another_config():
        meanwhile.append(_Meanwhile(lambda: open_experiment(changed), threading.Event()))
        meanwhile[0].wait()

    harness.benchmark = _Benchmark(
        harness.benchmark, split="dev", before=reopen_with_another_config
    )
    harness.evaluate_seed()

    with pytest.raises(ConfigChangedError, match="has run rollouts under it"):
        meanwhile[0].joined()
    assert meta.read_bytes() == before
    harness.close()


def test_a_run_opened_before_its_config_was_replaced_refuses_its_step(tmp_path):
    """The other order: the driver's run opened the experiment, then a start under the same
    name replaced its config (no rollout had run), then the run takes its step — with the
    config it read before."""
    harness = _open(tmp_path / "home")
    open_experiment(_config(tmp_path / "home", 1, "--benchmark.seed", "7"))
    before = files_digest(harness.experiment.paths.root)

    with pytest.raises(StepOrderError, match="config was replaced since this run opened it"):
        harness.evaluate_seed()

    assert files_digest(harness.experiment.paths.root) == before
    harness.close()


# -- 3. every re-ranking is a step of its own --------------------------------------------------


def _round(k: int, score: float) -> RoundRecord:
    return RoundRecord(round=k, status="evaluated", snapshot_id=f"{k}" * 40, dev_score=score)


def _promoted(rounds: tuple[RoundRecord, ...], at: datetime) -> Promotion:
    ranking = rank(rounds)
    best, snapshot_id, score = ranking[0]
    return Promotion(
        snapshot_id=snapshot_id, round=best, dev_score=score, ranking=ranking, created=at
    )


def test_every_re_ranking_the_search_asks_for_gets_a_run_key_of_its_own():
    """Round 1 re-evaluated twice: its score drops, then comes back. The third promotion is
    the first one's ranking again; the driver launches a step only for a new run key, so a
    key seen before would leave the stale promotion in place for good."""
    at = datetime(2026, 12, 1, tzinfo=UTC)
    high = (_round(0, 0.5), _round(1, 0.7))
    low = (_round(0, 0.5), _round(1, 0.3))
    keys = []
    promotion = None
    for n, rounds in enumerate((high, low, high)):
        step = next_step(State(rounds, promotion, None), max_steps=1)
        assert step.action == "promote"
        keys.append(run_key("exp", step))
        promotion = _promoted(rounds, at + timedelta(minutes=n))
    assert next_step(State(high, promotion, None), max_steps=1).action == "sealed_test"

    assert len(set(keys)) == len(keys), keys


# -- 4. the Dagster layer: partitions, the start job, the driver -------------------------------


def _materialize(instance, home: Path, job: str, partition, *, tags=None):
    """A run of one of the definitions' jobs as the UI launches it: no driver tag."""
    job_def = build_definitions(str(home)).resolve_job_def(job)
    return job_def.execute_in_process(
        instance=instance, partition_key=partition, tags=tags or {}, raise_on_error=False
    )


def _failure(result) -> str:
    return "\n".join(str(e.event_specific_data) for e in result.all_events if e.is_step_failure)


def _start(instance, home: Path, name: str, *overrides: str):
    launch = {"config_file": str(EXAMPLE), "name": name, "overrides": list(overrides)}
    return (
        build_definitions(str(home))
        .resolve_job_def("start_experiment")
        .execute_in_process(
            instance=instance,
            run_config={"ops": {"create_experiment": {"config": launch}}},
            raise_on_error=False,
        )
    )


def test_a_partition_that_aliases_a_round_or_names_no_slot_of_it_is_refused(tmp_path, storage):
    """The UI lets anyone add a key to a dynamic partition: `r0000.c0` reads as round 0 and
    `r000.c1` as round 0 of a slot Meta-Harness does not have. Run as round 0, either would
    evaluate round 0 again under a key the experiment never had."""
    home = tmp_path / "home"
    experiment = open_experiment(_config(home))
    name = experiment.config.experiment.name
    folder = experiment.paths.records
    with instance_on(storage) as instance:
        MH.register(instance, name, open_algorithm(experiment))
        seed = PARTITIONS.key(name, 0, "c0")
        assert _materialize(instance, home, "meta_harness", seed, tags={DRIVER_TAG: "1"}).success
        before = files_digest(folder)
        aliases = ["r0000.c0", "r000.c1", "r002.c0"]
        instance.add_dynamic_partitions(PARTITIONS.candidates.name, aliases)
        results = {
            alias: _materialize(
                instance,
                home,
                "meta_harness",
                dg.MultiPartitionKey({"candidate": alias, "experiment": name}),
            )
            for alias in aliases
        }

    for alias, result in results.items():
        assert not result.success, alias
        assert f"partition {alias}|{name} is not a candidate" in _failure(result)
    assert files_digest(folder) == before


def test_the_start_job_refuses_an_existing_experiment_s_name_with_another_config(tmp_path, storage):
    """docs/ui.md: an existing experiment keeps the config it was created with. The driver may
    already be running its first round: a second start under the same name with other
    settings must not swap the config under it."""
    home = tmp_path / "home"
    with instance_on(storage) as instance:
        assert _start(instance, home, "shared", "--algorithm.max_steps", "1").success
        meta = (home / "shared" / "run_meta.json").read_bytes()
        same = _start(instance, home, "shared", "--algorithm.max_steps", "1")
        other = _start(instance, home, "shared", "--algorithm.max_steps", "5")

    assert same.success  # starting it again, unchanged, is fine
    assert not other.success
    assert "'shared' exists with another config, which it keeps" in _failure(other)
    assert "algorithm.max_steps: 1 -> 5" in _failure(other)
    assert (home / "shared" / "run_meta.json").read_bytes() == meta


def test_the_start_job_s_overrides_cannot_move_the_experiment_out_of_the_home(tmp_path, storage):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    with instance_on(storage) as instance:
        result = _start(instance, home, "moved", "--experiment.home", str(elsewhere))

    assert result.success
    assert (home / "moved" / "run_meta.json").is_file() and not elsewhere.exists()


def test_one_broken_experiment_does_not_stop_the_driver_for_the_others(tmp_path, storage):
    """A sibling folder whose records cannot be read (a damaged record, a config this
    version cannot load) is reported and skipped; the driver still drives the rest."""
    home = tmp_path / "home"
    healthy = open_experiment(_config(home))
    name = healthy.config.experiment.name
    damaged = open_experiment(_config(home, 1, "--experiment.name", "damaged"))
    record = Layout.of(damaged.paths.records).round(0)
    record.parent.mkdir(parents=True)
    record.write_text("{")
    foreign = home / "foreign"
    foreign.mkdir()
    (foreign / "run_meta.json").write_text('{"config": {"algorithm": {"name": "gone"}}}')
    with instance_on(storage) as instance:
        MH.register(instance, name, open_algorithm(healthy))
        with dg.build_sensor_context(
            instance=instance, resources={"experiments_home": ExperimentsResource.at(home)}
        ) as context:
            result = round_driver(context)
        seed = _materialize(
            instance, home, "meta_harness", PARTITIONS.key(name, 0, "c0"), tags={DRIVER_TAG: "1"}
        )

    assert [r.run_key for r in result.run_requests] == [f"{name}:evaluate_seed:r000.c0"]
    assert seed.success, _failure(seed)  # its summary lists the home's experiments


def test_a_partition_naming_the_experiment_by_another_path_is_refused(tmp_path, storage):
    """An experiment key added by hand that reaches the same folder by another path
    (`<name>/../<name>`) would run the experiment's steps under a partition that is not its
    own — one the round driver does not wait for."""
    home = tmp_path / "home"
    experiment = open_experiment(_config(home))
    name = experiment.config.experiment.name
    alias = f"{name}/../{name}"
    with instance_on(storage) as instance:
        MH.register(instance, name, open_algorithm(experiment))
        instance.add_dynamic_partitions(PARTITIONS.experiments.name, [alias])
        before = files_digest(experiment.paths.root)
        seed = dg.MultiPartitionKey({"candidate": "r000.c0", "experiment": alias})
        result = _materialize(instance, home, "meta_harness", seed)

    assert not result.success
    assert f"partition {alias!r} is not an experiment" in _failure(result)
    assert files_digest(experiment.paths.root) == before


def test_an_experiment_the_instance_has_no_partitions_for_does_not_fail_the_driver_s_tick(
    tmp_path,
    storage,
):
    """A home restored or copied beside a fresh instance (or the instance wiped): the driver
    asked for a partition the instance did not know, and Dagster failed the whole tick — no
    experiment under the home moved again. The tick adds the partitions it asks for."""
    home = tmp_path / "home"
    known = open_experiment(_config(home, 1, "--experiment.name", "known"))
    open_experiment(_config(home, 1, "--experiment.name", "restored"))
    definitions = build_definitions(str(home))
    sensor = definitions.get_sensor_def("round_driver")
    with instance_on(storage) as instance:
        MH.register(instance, "known", open_algorithm(known))
        with dg.build_sensor_context(
            instance=instance,
            instance_ref=instance.get_ref(),  # as the daemon's: partitions load from it
            resources={"experiments_home": ExperimentsResource.at(home)},
            definitions=definitions,
        ) as context:
            tick = sensor.evaluate_tick(context)  # the requests resolved, as the daemon does

    assert sorted(r.run_key for r in tick.run_requests) == [
        "known:evaluate_seed:r000.c0",
        "restored:evaluate_seed:r000.c0",
    ]


@pytest.mark.parametrize("status", ["CANCELING", "SUSPENDED", "STARTED"])
def test_the_driver_waits_while_a_run_of_the_experiment_is_in_progress(tmp_path, status, storage):
    """A run being cancelled still runs its process (its jails, its last writes): the driver
    leaves the experiment alone until the run has ended, as for a running one."""
    home = tmp_path / "home"
    experiment = open_experiment(_config(home))
    name = experiment.config.experiment.name
    with instance_on(storage) as instance:
        MH.register(instance, name, open_algorithm(experiment))
        instance.add_run(
            dg.DagsterRun(
                job_name="meta_harness",
                run_id=f"run-{status.lower()}",
                status=dg.DagsterRunStatus[status],
                tags={EXPERIMENT_TAG: name},
            )
        )
        with dg.build_sensor_context(
            instance=instance, resources={"experiments_home": ExperimentsResource.at(home)}
        ) as context:
            result = round_driver(context)

    assert result.run_requests == []


def test_the_start_job_s_failure_does_not_write_a_key_from_the_file_it_was_pointed_at(
    tmp_path, storage
):
    """The Launchpad's `config_file` can name any YAML file on the host; a key-shaped string
    that file holds (as a mapping key, which the config errors name) must not reach the
    instance's event log unredacted."""
    secret = "sk-proj-" + "Zq7" * 12
    wrong = tmp_path / "credentials.yaml"
    wrong.write_text(f"experiment:\n  name: x\n{secret}: 1\n")
    launch = {"config_file": str(wrong), "name": None, "overrides": []}
    with instance_on(storage) as instance:
        result = (
            build_definitions(str(tmp_path / "home"))
            .resolve_job_def("start_experiment")
            .execute_in_process(
                instance=instance,
                run_config={"ops": {"create_experiment": {"config": launch}}},
                raise_on_error=False,
            )
        )
        logged = "\n".join(str(e) for e in instance.all_logs(result.run_id))

    assert not result.success
    assert "unknown key" in _failure(result)
    assert secret not in _failure(result) and secret not in logged
