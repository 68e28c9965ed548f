"""Where an experiment keeps its files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ALL_TASKS_RECORDS = "records/eval/all-*.jsonl"
"""The records of `flashrsi eval --split all` (every task, the test split's too): a folder
holding one is a suite check, never an experiment (`open_experiment` refuses it)."""


@dataclass(frozen=True)
class ExperimentPaths:
    """The folder tree of one experiment::

    <home>/<name>/
      run_meta.json     identity: config fingerprint, normalised config, package versions
      snapshots/        the snapshot store (a bare git repository)
      records/          trajectories and every other record, JSON or parquet
        chain.jsonl     the integrity chain: one entry per framework write (records/chain.py)
        chain.head      its last entry's seq and hash
      dagster/          asset values the IO manager keeps (derived; chained too)
      logs/             redacted logs, outside the chain
        gateway.jsonl   the model gateway's call log: one line per model call (gateway/log.py)
        gateway.reserved/  each live gateway's calls in flight, held against role caps
                        (gateway/shared.py)
      cache/            derived data a process rebuilds when absent or stale: the
                        contamination check's index and seed scans (contamination/cache.py)
      step.lock         held by the step being taken: one at a time (experiment/lock.py)
    """

    root: Path

    @property
    def run_meta(self) -> Path:
        return self.root / "run_meta.json"

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    @property
    def records(self) -> Path:
        return self.root / "records"

    @property
    def cache(self) -> Path:
        """Host-only, outside the chain: a Worker's jail never sees the home."""
        return self.root / "cache"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def gateway_log(self) -> Path:
        """The model gateway's redacted call log (what each role spent, across resumes and
        across the processes of candidates side by side)."""
        return self.logs / "gateway.jsonl"
