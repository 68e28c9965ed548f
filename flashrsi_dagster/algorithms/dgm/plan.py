"""What comes next, as a pure function of the records and the config: the CLI, the Dagster
hosts and every step's own order check call `next_step`; `choice` says, from the records of
the generations before, which parent and entry a candidate gets: the same whoever asks."""

from __future__ import annotations

import random
from dataclasses import dataclass

from flashrsi_dagster.algorithms.base import ONLY_SLOT, Step
from flashrsi_dagster.algorithms.dgm.config import DgmConfig
from flashrsi_dagster.algorithms.dgm.prompts import SPECIAL_ENTRIES
from flashrsi_dagster.algorithms.dgm.records import (
    CandidateRecord,
    DevRecord,
    Layout,
    Promotion,
    TestResult,
)
from flashrsi_dagster.algorithms.dgm.selection import Archive, Member
from flashrsi_dagster.records import read_optional


def slots_of(children: int) -> tuple[str, ...]:
    return tuple(f"c{i}" for i in range(children))


@dataclass(frozen=True)
class State:
    candidates: tuple[CandidateRecord, ...]
    """Every candidate with a result, the seed first, by generation then slot."""
    devs: tuple[DevRecord, ...]
    promotion: Promotion | None
    tests: tuple[TestResult, ...]

    def candidate(self, g: int, slot: str = ONLY_SLOT) -> CandidateRecord | None:
        return next((c for c in self.candidates if (c.generation, c.slot) == (g, slot)), None)

    def of(self, snapshot_id: str | None) -> CandidateRecord | None:
        return next((c for c in self.candidates if c.snapshot_id == snapshot_id), None)

    def admitted(self, before: int | None = None) -> list[CandidateRecord]:
        """The archive in admission order (generations before `before`, if given)."""
        return [
            c for c in self.candidates if c.admitted and (before is None or c.generation < before)
        ]

    @property
    def aborted(self) -> bool:
        seed = self.candidate(0)
        return seed is not None and not seed.admitted


def grid(config: DgmConfig) -> list[tuple[int, str]]:
    slots = slots_of(config.children_per_generation)
    return [(0, ONLY_SLOT)] + [(g, s) for g in range(1, config.generations + 1) for s in slots]


def read_state(layout: Layout, config: DgmConfig) -> State:
    found = [read_optional(layout.candidate(g, s), CandidateRecord) for g, s in grid(config)]
    candidates = tuple(c for c in found if c is not None)
    devs = [read_optional(layout.dev(c.generation, c.slot), DevRecord) for c in candidates]
    tests = [read_optional(layout.test(i), TestResult) for i in range(1, config.test_top_k + 1)]
    return State(
        candidates=candidates,
        devs=tuple(d for d in devs if d is not None),
        promotion=read_optional(layout.promotion, Promotion),
        tests=tuple(t for t in tests if t is not None),
    )


def archive_of(state: State, config: DgmConfig, before: int | None = None) -> Archive:
    archive = Archive(config.parents)
    for c in state.admitted(before):
        archive.add(c.snapshot_id or "", c.score or 0.0, c.parent_id)
    return archive


@dataclass(frozen=True)
class Choice:
    parent: CandidateRecord
    entry: str


def choice(state: State, config: DgmConfig, seed: int, g: int, slot: str) -> Choice:
    """Candidate (g, slot)'s parent and entry: the generation's parents drawn at once from
    the archive of the generations before (the experiment's seed and g seed the draw), then
    the slot's entry: a special one with `special_entry_probability`, else one of the
    parent's failed train tasks (a special one when it failed none)."""
    archive = archive_of(state, config, before=g)
    slots = slots_of(config.children_per_generation)
    parents = archive.choose(
        len(slots), random.Random(f"dgm:{seed}:{g}"), latest=not config.open_ended
    )
    member: Member = parents[slots.index(slot)]
    parent = state.of(member.snapshot_id)
    assert parent is not None
    rng = random.Random(f"dgm:{seed}:{g}:{slot}:entry")
    special = rng.random() < config.special_entry_probability
    if special or not parent.failed_tasks:
        return Choice(parent, rng.choice(SPECIAL_ENTRIES))
    return Choice(parent, rng.choice(sorted(parent.failed_tasks)))


def next_step(state: State, config: DgmConfig) -> Step:
    if state.aborted:
        return Step("aborted")
    done = {(c.generation, c.slot) for c in state.candidates}
    for g, slot in grid(config):
        if (g, slot) not in done:
            return Step("evaluate_seed" if g == 0 else "self_improve", g, slot)
    if state.promotion is None:
        return Step("promote")
    if len(state.tests) < min(config.test_top_k, len(state.promotion.ranking)):
        return Step("sealed_test")
    return Step("done")


ORDER = ("evaluate_seed", "self_improve", "promote", "sealed_test", "done")


def still_missing(state: State, config: DgmConfig, action: str) -> str | None:
    """Why `action` may not run now; None when it may (or it is done, and read back)."""
    step = next_step(state, config)
    if step.action == "aborted":
        return "the search was aborted: the seed did not pass its admission checks"
    if ORDER.index(step.action) >= ORDER.index(action):
        return None
    return f"{step.describe()} comes first"


def dev_candidates(state: State, config: DgmConfig) -> list[CandidateRecord]:
    """The admitted members evaluated on dev: the best by train score first (a tie keeps
    the earlier admission), `dev_candidates` of them (all when None)."""
    ranked = sorted(state.admitted(), key=lambda c: -(c.score or 0.0))
    return ranked[: config.dev_candidates] if config.dev_candidates else ranked


def rank(state: State) -> list[tuple[int, str, str, float]]:
    order = {(c.generation, c.slot): i for i, c in enumerate(state.candidates)}
    devs = sorted(state.devs, key=lambda d: (-d.dev_score, order[(d.generation, d.slot)]))
    return [(d.generation, d.slot, d.snapshot_id, d.dev_score) for d in devs]
