"""The dry run: what a run would otherwise find out late, checked without a model and before
anything is written (`flashrsi validate`; `run`, `eval` and `resume` check first too).

It loads the benchmark and draws its splits as the run does, reads each role's harness
declaration, asks each role's adapter what it cannot honour, and checks the machine (jails,
keys, the experiment folder). Each problem is one line naming the key path, and the file or
task id where there is one. The test split stays sealed: it is counted (`Splits.test_size`),
never unsealed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import ValidationError

from flashrsi_dagster.agents.base import Agent, AgentConfigError
from flashrsi_dagster.agents.budgets import STOPS
from flashrsi_dagster.agents.registry import UnknownAdapterError, adapter_class
from flashrsi_dagster.benchmarks.base import Benchmark, BenchmarkError
from flashrsi_dagster.benchmarks.loading import load_benchmark, load_splits
from flashrsi_dagster.benchmarks.splits import Splits
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.environments.jail import JailError, require_jails
from flashrsi_dagster.experiment.fork import ForkError, pinned, seeded, split_problems
from flashrsi_dagster.records import RecordError
from flashrsi_dagster.snapshots.components import COMPONENTS_FILE, Components, ComponentsError

ALL = "all"
"""`eval --split all`: every task of the benchmark, no split drawn (see `evaluation`)."""
EVOLVED_ROLE = "target"
"""The role whose harness becomes the seed snapshot that the algorithm evolves."""

_SELF_DESCRIBING = (
    BenchmarkError,
    ComponentsError,
    AgentConfigError,
    UnknownAdapterError,
    RecordError,
    ValidationError,
)
"""Errors whose message already names the file or key: shown without their type."""


def dry_run(config: ExperimentConfig, *, splits: tuple[str, ...] | None = None) -> list[str]:
    """Every problem found, one line each; empty when the run may start. `splits` must not
    be empty (default: those the algorithm needs; `eval` needs only the one it scores)."""
    adapters, role_problems = _adapters(config)
    problems = [
        *_confinement(config),
        *home_problems(config),
        *role_problems,
        *_keys(config),
        *_harnesses(config, adapters),
    ]
    problems += _evolution_limit(config) + _fork(config)
    problems += config.algorithm.sibling_problems(Path(config.experiment.dir).parent)
    benchmark, loading = _benchmark(config)
    problems += loading
    if benchmark is not None and splits == (ALL,):  # `eval --split all`: no split is drawn
        loading = _pool(config, benchmark)
        problems += loading or _benchmark_parts(config, benchmark)
    elif benchmark is not None:
        drawn, loading = _splits(config, benchmark)
        problems += loading or _benchmark_parts(config, benchmark)
        if drawn is not None:
            needer = "this command" if splits else config.algorithm.name
            problems += _split_sizes(drawn, splits or config.algorithm.REQUIRED_SPLITS, needer)
            if not splits:  # `eval` runs no algorithm
                problems += config.algorithm.split_problems(_sizes(drawn))
            problems += split_problems(config, drawn)
        problems += _zero_budgets(config, benchmark, adapters)
        if EVOLVED_ROLE in adapters:
            problem = benchmark.adapter_problem(adapters[EVOLVED_ROLE])
            if problem:
                problems.append(f"{config.role_key(EVOLVED_ROLE)}.type: {problem}")
    return problems


def _fork(config: ExperimentConfig) -> list[str]:
    """A fork's origin and candidate exist (`experiment.fork`); STOP evolves its improver,
    not the target's harness, so it has no candidate to start from."""
    if config.experiment.fork is None or seeded(config):  # its seed made: origin not needed
        return []
    if config.algorithm.name == "stop":
        return [
            "experiment.fork: stop evolves its improver program, not the target's harness; "
            "fork an experiment of another algorithm"
        ]
    try:
        pinned(config)
    except ForkError as exc:
        return [str(exc)]
    return []


def _confinement(config: ExperimentConfig) -> list[str]:
    """Jailed agents need bubblewrap and root."""
    if config.experiment.confinement == "none":
        return []
    try:
        require_jails()
    except JailError as exc:
        return [f"experiment.confinement: {exc}"]
    return []


PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
        "securityfs", "pstore", "bpf", "configfs", "efivarfs", "fusectl", "mqueue",
        "binfmt_misc", "autofs", "hugetlbfs", "rpc_pipefs", "nsfs",
    }
)  # fmt: skip
"""Kernel filesystems that look like folders but hold no files of ours (root may even
`mkdir` in some): an experiment home there would fail, or vanish, once the run writes."""


def home_problems(config: ExperimentConfig) -> list[str]:
    """The experiment folder must be one the run can create or reopen: a file in its way, a
    read-only or kernel filesystem would fail only once the run opens the experiment; a
    symbolic link would open another home's experiment."""
    folder = config.experiment.dir
    try:
        return _home_problems(folder)
    except OSError as exc:  # a name past NAME_MAX or a path past PATH_MAX: stat itself fails
        return [f"experiment.home: {folder} cannot hold an experiment: {exc.strerror or exc}"]


def path_problem(path: Path) -> str | None:
    """Why `path` can name no file at all (a part past NAME_MAX, the whole past PATH_MAX:
    stat itself fails), else None; for the commands that read a home without a config."""
    try:
        path.exists()
    except OSError as exc:
        return f"{path} can name no folder: {exc.strerror or exc}"
    return None


def _home_problems(folder: Path) -> list[str]:
    if folder.is_symlink():  # run, init and eval would open, and write, the folder it names
        return [
            f"experiment.name: {folder} is a symbolic link (to {os.readlink(folder)}), not an "
            "experiment's folder; an experiment is opened in its own home"
        ]
    existing = next(path for path in (folder, *folder.parents) if path.exists())
    key = "experiment.name" if existing == folder else "experiment.home"
    kind = filesystem_type(existing)
    if kind in PSEUDO_FILESYSTEMS:
        return [
            f"{key}: {existing} is on the kernel's {kind} filesystem, which holds no files of "
            f"ours, so {folder} cannot hold an experiment; choose a folder on a disk"
        ]
    if not existing.is_dir():
        return [f"{key}: {existing} is not a folder, so {folder} cannot be created"]
    if not os.access(existing, os.W_OK | os.X_OK):  # a read-only mount too (EROFS)
        return [f"{key}: {existing} is not writable, so {folder} cannot be created"]
    return []


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem `path` is on (`ext4`, `proc`, …), from the mount table;
    None where there is none to read."""
    try:
        table = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    target, best, kind = path.resolve(), -1, None
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        # the table escapes a space in a mount point as \040 (tab, newline, \ likewise)
        point = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[1]))
        if (target == point or point in target.parents) and len(point.parts) >= best:
            best, kind = len(point.parts), fields[2]
    return kind


def _adapters(config: ExperimentConfig) -> tuple[dict[str, type[Agent]], list[str]]:
    """Each role's adapter class, and what it cannot do in its role: an unknown type, an
    editing role without file tools, an `llm` section it cannot honour."""
    classes: dict[str, type[Agent]] = {}
    problems = []
    for name, role in config.roles().items():
        where = config.role_key(name)
        try:
            cls = adapter_class(role.type)
        except Exception as exc:  # a user's adapter module may fail to import in any way
            problems.append(f"{where}.type: {one_line(exc)}")
            continue
        classes[name] = cls
        if name in config.algorithm.EDITING_ROLES and not cls.has_file_tools:
            problems.append(
                f"{where}.type: {role.type!r} has no file tools; the {name} must be an agent "
                "that can list, read and edit files (e.g. `miniagent`, `claude-code`)"
            )
        if name in config.algorithm.EDITING_ROLES and not role.permissions.edit:
            problems.append(
                f"{where}.permissions.edit: false: the {name} edits harness files and must be "
                "allowed to; remove it or set it to true"
            )
        problems += cls.config_problems(role, where)
    return classes, problems + _adopted_improver(config, classes)


def _adopted_improver(config: ExperimentConfig, classes: dict[str, type[Agent]]) -> list[str]:
    """`worker.harness: adopted` runs the target's harness as the Worker: its adapter must be
    able to edit files, or every later candidate would be a failed edit."""
    target = classes.get(EVOLVED_ROLE)
    if not config.algorithm.adopted_improver() or target is None or target.has_file_tools:
        return []
    return [
        f"{config.role_key('worker')}.harness: adopted runs the target's harness as the "
        f"Worker, but the target's adapter {config.agent.type!r} has no file tools to edit "
        "with; use `fixed`, or a target such as `miniagent`, `claude-code` or `codex`"
    ]


def _keys(config: ExperimentConfig) -> list[str]:
    """Keys referenced but not set: a run would spend its whole budget, sealed test
    included, on refused calls."""
    problems = []
    for name, role in config.roles().items():
        key = role.llm.api_key
        if key is not None and key.env_var not in os.environ:
            problems.append(
                f"{config.role_key(name)}.llm.api_key: {key} is not set; export {key.env_var} "
                "in the shell that runs flashrsi"
            )
        elif key is not None and (problem := key_problem(os.environ[key.env_var])):
            problems.append(f"{config.role_key(name)}.llm.api_key: {key} {problem}")
    return problems


def key_problem(value: str) -> str | None:
    """Why a key's value cannot go in a request header as it is (never quoting it), or None.
    A key file read with its newline, or a `.env` file's CR, made every call of the role fail
    in the gateway (no header holds a line break), or be refused (401) for a space."""
    if not value:
        return "is empty"
    if value != value.strip() or not value.isprintable():
        return (
            "holds whitespace at its ends or a control character (a key file's trailing "
            "newline?): no endpoint takes it as it is; export it stripped"
        )
    if not value.isascii():  # a quote pasted with it: HTTP headers carry Latin-1 at most
        return "holds a character that is not ASCII (a quote pasted with it?): no key does"
    if " " in value:  # `Bearer <key>` copied from a curl line: the gateway writes its own
        return (
            "holds a space (a `Bearer ` prefix or two keys pasted?): no key does; export the "
            "key alone"
        )
    return None


def _harnesses(config: ExperimentConfig, adapters: dict[str, type[Agent]]) -> list[str]:
    """Every role's harness declares its components; the evolved one declares files."""
    problems = []
    for name, cls in adapters.items():
        where = f"{config.role_key(name)}.source_dir"
        try:
            folder = config.roles()[name].source_dir or cls.builtin_harness()
            components = Components.from_file(folder / COMPONENTS_FILE)
        except (AgentConfigError, ComponentsError) as exc:
            problems.append(f"{where}: {one_line(exc)}")
            continue
        if name != EVOLVED_ROLE:
            continue
        if not _declares_a_file(folder, components):
            problems.append(
                f"{where}: {folder} has no file matching its components "
                f"({components.describe()}), so the seed snapshot would be empty"
            )
        else:  # what the algorithm's settings name in the seed (ModularRSI's module files)
            problems += config.algorithm.seed_problems(folder, components.declares)
    return problems


def _declares_a_file(folder: Path, components: Components) -> bool:
    files = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return any(components.declares(path) for path in files)


def _zero_budgets(
    config: ExperimentConfig, benchmark: Benchmark, adapters: dict[str, type[Agent]]
) -> list[str]:
    """A budget of 0 (`max_turns`, `max_tool_calls`) allows no tool call (seed 003: 0 is
    none). Refused where the role could then do nothing: an editing role (it edits through
    tool calls) and a target on a benchmark solved with tools. A target answering in text
    (text classification) may take 0: the model is asked only for its answer."""
    problems = []
    for name, role in config.roles().items():
        if name in config.algorithm.EDITING_ROLES:
            why = f"the {name} edits harness files through tool calls, so it could make no edit"
        elif name == EVOLVED_ROLE and benchmark.solved_with_tools:
            if name in adapters and adapters[name].task_environment_only:
                continue  # Harbor's own agents (oracle, nop) make no model call
            why = (
                f"{benchmark.name} tasks are solved by running commands, so the target could "
                "do nothing"
            )
        else:
            continue
        problems += [
            f"{config.role_key(name)}.{key}: 0 allows no tool call: {why}; give it n > 0, or "
            "none (null) for no count limit"
            for key in STOPS
            if getattr(role, key) == 0
        ]
    return problems


def _evolution_limit(config: ExperimentConfig) -> list[str]:
    """`evolution_limit` limits only the evolution data file: without one it would be a key
    that silently does nothing (`benchmark.limit` limits the splits)."""
    bench = config.benchmark
    if bench.evolution_limit is not None and bench.evolution_data_path is None:
        return [
            "benchmark.evolution_limit: set without benchmark.evolution_data_path; it limits "
            "only that data (benchmark.limit limits each split, train included)"
        ]
    return []


def _benchmark(config: ExperimentConfig) -> tuple[Benchmark | None, list[str]]:
    try:
        return load_benchmark(config.benchmark), []
    except Exception as exc:  # reported, not raised: a loader can fail in any way
        return None, [_benchmark_problem(config, exc)]


def _splits(config: ExperimentConfig, benchmark: Benchmark) -> tuple[Splits | None, list[str]]:
    """The splits drawn as the run draws them (reading every task, as the run does)."""
    try:
        return load_splits(config.benchmark, benchmark), []
    except Exception as exc:  # reported, not raised: a data file can be wrong in any way
        return None, [_benchmark_problem(config, exc)]


def _pool(config: ExperimentConfig, benchmark: Benchmark) -> list[str]:
    """Every task loads (what `eval --split all` runs)."""
    try:
        benchmark.tasks()
    except Exception as exc:  # reported, not raised: a data file can be wrong in any way
        return [_benchmark_problem(config, exc)]
    return []


def _benchmark_parts(config: ExperimentConfig, benchmark: Benchmark) -> list[str]:
    """What a benchmark's data needs beside it and lacks here, where the benchmark says
    (`missing_parts`; SWE-bench: every instance's repository at its base commit)."""
    missing_parts = getattr(benchmark, "missing_parts", None)
    if missing_parts is None:
        return []
    try:
        return [_benchmark_problem(config, BenchmarkError(part)) for part in missing_parts()]
    except Exception as exc:  # reported, not raised: a data folder can be wrong in any way
        return [_benchmark_problem(config, exc)]


def _sizes(splits: Splits) -> dict[str, int]:
    """Tasks in each split; test is counted, not unsealed."""
    return {"train": len(splits.train), "dev": len(splits.dev), "test": splits.test_size}


def _split_sizes(splits: Splits, needed: tuple[str, ...], needer: str) -> list[str]:
    """Splits that must not be empty."""
    sizes = _sizes(splits)
    return [
        f"benchmark.split_counts.{name}: the {name} split is empty, but {needer} needs it; "
        f"give it tasks (benchmark.split_counts.{name}, or data rows with split: {name})"
        for name in needed
        if not sizes[name]
    ]


def _benchmark_problem(config: ExperimentConfig, exc: Exception) -> str:
    """A loader's error under the key that supplied the data it names."""
    message = one_line(exc)
    if message.startswith("benchmark."):
        return message
    bench = config.benchmark
    for key in ("evolution_data_path", "data_path", "tasks_dir"):
        value = getattr(bench, key)
        if value is not None and str(value) in message:
            return f"benchmark.{key}: {message}"
    return f"benchmark: {message}"


def one_line(exc: Exception) -> str:
    """An exception as one line: our loaders' messages already name what is wrong; anything
    else keeps its type, since its message alone may not say what kind of failure it is."""
    if isinstance(exc, ValidationError):
        text = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
    else:
        text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text if isinstance(exc, _SELF_DESCRIBING) else f"{type(exc).__name__}: {text}"
