"""The contamination check's index and seed scans kept on disk (`contamination/cache.py`): a
second process with the same inputs reads them back, and judges exactly as a cold one."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from flashrsi_dagster.contamination import ContentCheck, cache
from flashrsi_dagster.contamination import check as check_module
from flashrsi_dagster.contamination.detector import judge, scan
from flashrsi_dagster.contamination.index import SecretIndex
from tests.contamination.test_detector import BENCHMARK, SPLITS, TABLE, TASKS, Harness, append

CONTAMINATED = append("runtime/agent.py", f"\nANSWERS = {TABLE!r}\n")
CLEAN = append("prompts/system.md", "Read the whole message before choosing a label.\n")


def verdicts(harness: Harness, check: ContentCheck, candidates) -> list[dict]:
    harness.check = check
    return [check.judge(harness.store, c).model_dump(exclude={"created"}) for c in candidates]


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """A real store with a contaminated and a clean candidate, judged with no cache (as a bare
    check is) and with a cold cache folder, which the judging fills."""
    root = tmp_path_factory.mktemp("cache")
    harness = Harness(root, ContentCheck(BENCHMARK, lambda: TASKS, SPLITS))
    candidates = [harness.child(CONTAMINATED), harness.child(CLEAN)]
    bare = verdicts(harness, ContentCheck(BENCHMARK, lambda: TASKS, SPLITS), candidates)
    kept = root / "kept"
    made = verdicts(harness, ContentCheck(BENCHMARK, lambda: TASKS, SPLITS, kept=kept), candidates)
    return harness, candidates, kept, bare, made


def warm(kept: Path, splits=SPLITS, tasks=TASKS) -> ContentCheck:
    return ContentCheck(BENCHMARK, lambda: tasks, splits, kept=kept)


def test_a_warm_cache_is_read_back_and_judges_as_a_cold_one_and_as_none(cold, monkeypatch):
    harness, candidates, kept, bare, made = cold
    assert bare[0]["contaminated"] and not bare[1]["contaminated"]
    assert made == bare
    assert sorted(p.name for p in kept.iterdir()) == [
        "index.marshal",
        f"seed-{harness.seed.id}.marshal",
    ]

    def rebuilt(*_, **__):
        raise AssertionError("rebuilt despite a warm cache")

    built = ContentCheck(BENCHMARK, lambda: TASKS, SPLITS).index.data()
    monkeypatch.setattr(SecretIndex, "build", rebuilt)
    monkeypatch.setattr(check_module, "scan", rebuilt)
    check = warm(kept)
    assert check.index.data() == built
    check._baseline(harness.seed.id, harness.store.files(harness.seed.id))  # read, not scanned
    monkeypatch.undo()
    assert verdicts(harness, warm(kept), candidates) == bare


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", "truncated"])
def test_a_corrupt_or_truncated_cache_is_rebuilt_and_judges_the_same(cold, damage):
    harness, candidates, kept, bare, _ = cold
    for path in kept.iterdir():
        whole = path.read_bytes()
        path.write_bytes(whole[: len(whole) // 2] if damage == "truncated" else damage)
    assert verdicts(harness, warm(kept), candidates) == bare
    for path in kept.iterdir():  # rewritten whole
        assert len(path.read_bytes()) > 100


def test_a_changed_split_or_task_set_is_a_new_key_never_the_old_index(cold):
    _, _, kept, _, _ = cold
    moved = SPLITS | {TASKS[0].id: "dev"}
    checks = [warm(kept), warm(kept, moved), warm(kept, SPLITS, TASKS[1:])]
    same, split, fewer = (check.index for check in checks)
    assert same.tasks[0] == (TASKS[0].id, "train") and split.tasks[0] == (TASKS[0].id, "dev")
    assert len(fewer.tasks) == len(TASKS) - 1
    assert len({check._key for check in checks}) == 3


def test_a_scan_with_matches_is_stored_whole():
    """A seed that holds secrets (a fork's root, a harness shipped with examples): its scan,
    every match with its stream, comes back equal, and judges a candidate the same."""
    check = ContentCheck(BENCHMARK, lambda: TASKS, SPLITS)
    files = {"runtime/agent.py": f"ANSWERS = {TABLE!r}\n".encode()}
    made = scan(files, check.index)
    assert made.matches
    back = cache.scan_of(marshal.loads(marshal.dumps(cache.plain_scan(made))))
    assert back == made
    assert [m.stream for m in back.matches] == [m.stream for m in made.matches]
    assert [m.at for m in back.matches] == [m.at for m in made.matches]
    more = {"runtime/agent.py": files["runtime/agent.py"] + b"# more\n"}
    assert judge(scan(more, check.index), back, check.index) == judge(
        scan(more, check.index), made, check.index
    )
