"""Experiment identity: `run_meta.json` pins the config an experiment was started with.

Reopening with a different config is refused, listing what changed, once the experiment has
run a rollout. Before that no result exists under the old config, so the new one is adopted
and the replacement recorded (`RunMeta.replaced`) — unless it would change what the seed
snapshot is captured from after the seed was captured. `force=True` reopens anyway and marks
the experiment as no longer a valid sealed experiment, for good.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.config.behaviour import BehaviourConfig
from flashrsi_dagster.config.comparison import ComparisonConfig
from flashrsi_dagster.config.experiment import ExperimentConfig, role_key
from flashrsi_dagster.config.names import InvalidName, checked_name
from flashrsi_dagster.experiment.paths import ExperimentPaths
from flashrsi_dagster.records import RecordStore, read_record
from flashrsi_dagster.records.chain import CHAIN

_PACKAGES = (
    "flashrsi-dagster",
    "dagster",
    "dagster-docker",
    "pydantic",
    "openai",
    "gitpython",
    "pandas",
    "pyarrow",
    "scipy",
)
# Where the home folder sits does not change what the experiment is.
_NOT_IDENTITY = {("experiment", "home"), ("experiment", "control")}
"""What does not identify an experiment: where it lives, what it is reported against."""
_ADDED_LATER = {
    "comparison": lambda: ComparisonConfig().model_dump(mode="json"),
    "behaviour": lambda: BehaviourConfig().model_dump(mode="json"),
}
"""Sections added after experiments had run: left at their default they are left out of the
identity, so an experiment started before the section existed (it ran under the default)
reopens unchanged; any declared value is part of it."""
_KEYS_ADDED_LATER: dict[tuple[str, ...], Any] = {
    ("algorithm", "candidates_per_round"): 1,
    ("experiment", "fork"): None,
    ("comparison", "on_violation"): "refuse",
}
"""Keys added after experiments had run, with their default: as `_ADDED_LATER`, a key left at
it is left out of the identity (an older experiment ran under it); any other value is in."""
_SEED_KEYS = tuple(f"{role_key('target')}.{key}" for key in ("source_dir", "type"))
"""What the seed snapshot is captured from; once captured it is kept (a re-evaluated round 0
must not fork the search), so these cannot change under a captured seed."""


class ConfigChangedError(RuntimeError):
    """Reopening an experiment with a config that differs from the one it started with."""

    def __init__(self, experiment: str, changes: list[str], reason: str) -> None:
        self.changes = changes
        listing = "\n".join(f"  {change}" for change in changes)
        super().__init__(
            f"experiment {experiment!r} was started with a different config and {reason}; "
            f"changed:\n{listing}\n"
            "Use a new experiment name, or --force to continue anyway (the experiment is then "
            "marked as no longer a valid sealed experiment)."
        )


class ForcedReopen(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: datetime
    previous_fingerprint: str
    changes: list[str]


class ReplacedBeforeRollouts(BaseModel):
    """A config replaced while the experiment had run no rollout: nothing was measured under
    the old one, so the experiment stays valid."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    previous_fingerprint: str
    changes: list[str]


class RunMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["run_meta"] = "run_meta"
    schema_version: Literal[1, 2] = Field(2, description="2 added `replaced`; 1 reads as is.")
    experiment: str
    created: datetime
    fingerprint: str = Field(description="sha256 of the normalised config (home excluded).")
    config: dict[str, Any] = Field(description="The normalised config, secrets as references.")
    packages: dict[str, str] = Field(description="Versions of Python and key packages.")
    forced: list[ForcedReopen] = Field(default_factory=list)
    replaced: list[ReplacedBeforeRollouts] = Field(
        default_factory=list, description="Configs replaced before any rollout ran."
    )

    @property
    def confined(self) -> bool:
        return self.config.get("experiment", {}).get("confinement", "bwrap") != "none"

    @property
    def sealed_valid(self) -> bool:
        return not self.forced and self.confined

    def validity_note(self) -> str | None:
        """The line every summary shows once the experiment was forced through a change, or
        when its agents ran unconfined (nothing kept them from their own score)."""
        notes = []
        if not self.confined:
            notes.append(
                "NOT A VALID SEALED EXPERIMENT: agents ran unconfined "
                "(experiment.confinement: none), with nothing keeping them from the records, "
                "the labels or the test split"
            )
        if self.forced:
            last = self.forced[-1]
            notes.append(
                f"NOT A VALID SEALED EXPERIMENT: reopened with a changed config using --force "
                f"{len(self.forced)} time(s), last on {last.at:%Y-%m-%d %H:%M} UTC "
                f"({'; '.join(last.changes)})"
            )
        return "\n".join(notes) or None


def normalised(config: ExperimentConfig) -> dict[str, Any]:
    return config.model_dump(mode="json")


def fingerprint(config_json: dict[str, Any]) -> str:
    identity = _identity(config_json)
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def config_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Dotted `key: old -> new` lines, in a stable order."""
    before, after = _flatten(_identity(old)), _flatten(_identity(new))
    missing = object()
    changes = []
    for key in sorted(before.keys() | after.keys()):
        was, now = before.get(key, missing), after.get(key, missing)
        if was != now:
            show = lambda v: "<absent>" if v is missing else json.dumps(v)  # noqa: E731
            changes.append(f"{key}: {show(was)} -> {show(now)}")
    return changes


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def open_identity(
    config: ExperimentConfig,
    path: Path,
    records: RecordStore,
    *,
    force: bool = False,
    seeded: Callable[[], bool],
    exclusive: Callable[[], AbstractContextManager] = nullcontext,
) -> RunMeta:
    """Create `run_meta.json` at `path`, or check the config against it (see module doc).
    `seeded` says whether the seed snapshot was captured already; `exclusive` is held while
    a changed config replaces the old one (the experiment's step lock: not under a step)."""
    current = normalised(config)
    digest = fingerprint(current)
    if not path.exists():
        meta = RunMeta(
            experiment=config.experiment.name,
            created=datetime.now(UTC),
            fingerprint=digest,
            config=current,
            packages=package_versions(),
        )
        records.write(path, meta)
        return meta
    if read_record(path, RunMeta).fingerprint == digest:
        return read_record(path, RunMeta)
    with exclusive():  # a step in flight ends first, and may run the rollouts that keep it
        return _reopen_changed(config, path, records, current, digest, force, seeded)


def _reopen_changed(
    config: ExperimentConfig,
    path: Path,
    records: RecordStore,
    current: dict[str, Any],
    digest: str,
    force: bool,
    seeded: Callable[[], bool],
) -> RunMeta:
    meta = read_record(path, RunMeta)
    if meta.fingerprint == digest:
        return meta
    changes = config_changes(meta.config, current)
    entry = {"at": datetime.now(UTC), "previous_fingerprint": meta.fingerprint, "changes": changes}
    kept = _why_kept(records, changes, seeded)
    if kept is None:
        meta.replaced.append(ReplacedBeforeRollouts(**entry))
    elif force:
        meta.forced.append(ForcedReopen(**entry))
    else:
        raise ConfigChangedError(config.experiment.name, changes, kept)
    meta.schema_version, meta.fingerprint, meta.config = 2, digest, current
    records.write(path, meta)
    return meta


def stored_config(home: Path, name: str) -> ExperimentConfig:
    """The config experiment `name` under `home` was started with (its `run_meta.json`), at
    that home. Raises `InvalidName` (a path given as a name), `RecordError` or pydantic's
    `ValidationError` (all `ValueError`s). The folder must hold the experiment of its own name:
    a copy under another name would otherwise open (and create) the experiment of the name it
    records."""
    folder = home / checked_name(name)
    if folder.is_symlink():  # a name would open, and then write, another home's experiment
        raise InvalidName(
            f"{folder}: a symbolic link (to {os.readlink(folder)}), not an experiment's folder; "
            "an experiment is opened from its home, with `--home` naming the home that holds it"
        )
    run_meta = ExperimentPaths(folder).run_meta
    meta = read_record(run_meta, RunMeta)
    config = ExperimentConfig.model_validate(meta.config)
    if config.experiment.name != name:
        raise InvalidName(
            f"{run_meta}: records experiment {config.experiment.name!r}, not {name!r} (a copied "
            "or renamed folder); an experiment is resumed under the name it was started with"
        )
    config.experiment.home = home.resolve()
    return config


def ran_rollouts(root: Path) -> bool:
    """Whether the experiment at `root` has run a rollout: a rollout record (a `*.jsonl`
    under `records/`, the chain aside) with anything in it. A torn line counts: that rollout
    ran, even though it never finished."""
    records = root / "records"
    return any(
        p.stat().st_size > 0 for p in records.rglob("*.jsonl") if p != root / CHAIN and p.is_file()
    )


def _why_kept(records: RecordStore, changes: list[str], seeded: Callable[[], bool]) -> str | None:
    """Why the old config must stay, or None: a changed config may replace it when no
    rollout ran under it, the folder matches its chain (a rollout record removed behind the
    chain's back is refused, not taken for "none ran"), and the seed is not already captured
    from what changed."""
    if ran_rollouts(records.root):
        return "has run rollouts under it"
    records.verify()
    if any(change.startswith(_SEED_KEYS) for change in changes) and seeded():
        return "has captured its seed snapshot from the old target harness"
    return None


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _identity(config_json: dict[str, Any]) -> dict[str, Any]:
    """What identifies the config: the home left out, and sections added later at default."""
    identity = _drop(config_json, _NOT_IDENTITY)
    for section, default in _ADDED_LATER.items():
        if identity.get(section) == default():
            identity.pop(section)
    for (*parents, key), default in _KEYS_ADDED_LATER.items():
        node = identity
        for parent in parents:
            node = node.get(parent) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(key, default) == default:
            node.pop(key, None)
    return identity


def _drop(value: dict[str, Any], paths: set[tuple[str, ...]]) -> dict[str, Any]:
    out = json.loads(json.dumps(value))
    for path in paths:
        node = out
        for key in path[:-1]:
            node = node.get(key, {})
        node.pop(path[-1], None)
    return out
