"""DGM's decisions for the ledger (`decisions.ledger`): `adopt` (scope `archive`) or `reject`
of every child as soon as it is recorded (admission: loads, clean content, keeps its editing
ability; never its score), and at the promotion `adopt` of the best by dev and `reject` of
every other member evaluated on dev, with paired statistics against the seed on the same dev
tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.dgm.plan import State
from flashrsi_dagster.algorithms.dgm.records import CandidateRecord, stem
from flashrsi_dagster.decisions.adoption import refused_entry
from flashrsi_dagster.decisions.ledger import EXPERIMENT, Decision, Evidence, Ref, raw_paths
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.paired import paired

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.dgm.run import Dgm

NAME = "dgm"


def decisions(dgm: Dgm, state: State) -> list[Decision]:
    seed = state.candidate(0)
    if seed is None:
        return []
    made = [_archive_entry(dgm, c, seed) for c in state.candidates if c.generation > 0]
    if state.promotion is None:
        return made
    best = state.promotion
    refused = {f.candidate.snapshot_id: f for f in best.refused}
    for d in state.devs:
        c = state.candidate(d.generation, d.slot)
        assert c is not None
        if d.snapshot_id in refused:
            key = f"{NAME}/promotion/{stem(c.generation, c.slot)}"
            raw = raw_paths(dgm.experiment.paths.root, dgm.layout.candidate(c.generation, c.slot))
            base = Ref(snapshot_id=seed.snapshot_id, round=0)
            evidence = _dev(dgm, c, seed)
            made.append(refused_entry(NAME, key, refused[d.snapshot_id], base, raw, evidence))
        elif d.snapshot_id == best.snapshot_id:
            by_rule = f"; {len(refused)} ranked above it refused by the trade-off rule"
            why = f"promoted: the best dev score, {d.dev_score:.3f}" + (by_rule if refused else "")
            made.append(
                _entry(
                    dgm, f"{NAME}/promotion", "adopt", c, seed, why, _dev(dgm, c, seed), EXPERIMENT
                )
            )
        else:
            why = f"not promoted: dev score {d.dev_score:.3f} vs {best.dev_score:.3f}"
            made.append(
                _entry(
                    dgm,
                    f"{NAME}/promotion/{stem(c.generation, c.slot)}",
                    "reject",
                    c,
                    seed,
                    why,
                    _dev(dgm, c, seed),
                )
            )
    return made


def _archive_entry(dgm: Dgm, c: CandidateRecord, seed: CandidateRecord) -> Decision:
    if c.admitted:
        why = f"admitted to the archive: loads and keeps its editing ability (train {c.score:.3f})"
        evidence = Evidence(
            scores={"train_score": c.score, "seed_train_score": seed.score},
            not_compared="admission does not compare scores: stepping stones stay",
        )
    else:
        why = "not admitted: " + "; ".join(c.reasons)
        evidence = Evidence(not_compared="not scored: refused before its evaluation")
    # Admission into the archive is an `adopt` of scope `archive`: the member may be a parent.
    return _entry(
        dgm,
        f"{NAME}/archive/{stem(c.generation, c.slot)}",
        "adopt" if c.admitted else "reject",
        c,
        seed,
        why,
        evidence,
        "archive",
    )


def _entry(dgm, id_, decision, c: CandidateRecord, seed, reason, evidence, scope="search"):
    parent = f"; parent {c.parent_id[:12]}" if c.parent_id else ""
    by = (
        f", produced by {c.produced_by[:12]}"
        if c.produced_by
        else (", produced by the Worker" if c.generation else "")
    )
    return Decision(
        id=id_,
        decision=decision,
        algorithm=NAME,
        scope=scope,
        candidate=Ref(snapshot_id=c.snapshot_id, round=c.generation, slot=c.slot),
        baseline=Ref(snapshot_id=seed.snapshot_id, round=0),
        reason=reason + parent + by,
        evidence=evidence,
        eval_set=c.eval_set,
        raw=raw_paths(dgm.experiment.paths.root, dgm.layout.candidate(c.generation, c.slot)),
    )


def _dev(dgm: Dgm, c: CandidateRecord, seed: CandidateRecord) -> Evidence:
    def frame(r: CandidateRecord):
        record = RolloutRecord(dgm.layout.dev_rollouts(r.generation, r.slot))
        return scores_frame(final_trajectories(record, dgm.settings.max_infra_reruns))

    if c.generation == 0:
        return Evidence(not_compared="the seed itself")
    if not dgm.layout.dev_rollouts(0, "c0").exists():
        return Evidence(not_compared="the seed was not evaluated on dev (dev_candidates)")
    return Evidence(paired=paired(frame(c), frame(seed)).model_dump(mode="json"))
