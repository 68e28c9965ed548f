"""Splits: a deterministic draw or given splits, never overlapping, test sealed."""

from __future__ import annotations

import pytest

from flashrsi_dagster.benchmarks.base import BenchmarkError, Task
from flashrsi_dagster.benchmarks.splits import Splits, make_splits, replace_train
from flashrsi_dagster.config import SplitCounts


def _tasks(n: int, prefix: str = "t", **metadata) -> list[Task]:
    return [
        Task(
            id=f"{prefix}{i}",
            instruction=f"{prefix} text {i}",
            verifier={"label": "a"},
            metadata=metadata,
        )
        for i in range(n)
    ]


COUNTS = SplitCounts(train=4, dev=3, test=2)


def test_the_draw_is_deterministic_and_disjoint():
    pool = _tasks(12)

    first = make_splits(pool, COUNTS, seed=7)
    again = make_splits(list(reversed(pool)), COUNTS, seed=7)
    other = make_splits(pool, COUNTS, seed=8)

    def ids(s):
        return (
            [t.id for t in s.train],
            [t.id for t in s.dev],
            [t.id for t in s.unseal_test()],
        )

    assert ids(first) == ids(again)
    assert ids(first) != ids(other)
    train, dev, test = map(set, ids(first))
    assert (len(train), len(dev), len(test)) == (4, 3, 2)
    assert not (train & dev or train & test or dev & test)


def test_growing_train_keeps_dev_and_test():
    pool = _tasks(12)

    small = make_splits(pool, SplitCounts(train=1, dev=3, test=2), seed=1)
    large = make_splits(pool, SplitCounts(train=7, dev=3, test=2), seed=1)

    assert small.dev == large.dev
    assert small.unseal_test() == large.unseal_test()


def test_limit_caps_every_split():
    splits = make_splits(_tasks(12), COUNTS, seed=0, limit=2)

    assert (len(splits.train), len(splits.dev), splits.test_size) == (2, 2, 2)


def test_test_is_sealed_behind_one_method():
    splits = make_splits(_tasks(12), COUNTS, seed=0)

    assert not hasattr(splits, "test")
    assert "_test" not in repr(splits)
    assert len(splits.unseal_test()) == 2


def test_the_test_ids_answer_for_an_id_held_and_list_none():
    splits = make_splits(_tasks(12), COUNTS, seed=0)
    test = [t.id for t in splits.unseal_test()]

    assert all(i in splits.test_ids for i in test)
    assert not any(t.id in splits.test_ids for t in (*splits.train, *splits.dev))
    assert not any(i in repr(splits.test_ids) for i in test)
    with pytest.raises(TypeError):
        list(splits.test_ids)  # type: ignore[call-overload]


def test_the_splits_compare_their_test_tasks_themselves():
    splits = make_splits(_tasks(12), COUNTS, seed=0)
    leaked = Splits(splits.train, (*splits.dev, splits.unseal_test()[0]), splits.unseal_test())

    splits.check_disjoint()
    with pytest.raises(BenchmarkError, match=r"dev overlaps test: t\d+ \(same content\)"):
        leaked.check_disjoint()


def test_given_splits_are_used_as_given():
    pool = (
        _tasks(2, "a", split="train") + _tasks(1, "b", split="dev") + _tasks(1, "c", split="test")
    )

    splits = make_splits(pool, None, seed=0)

    assert [t.id for t in splits.train] == ["a0", "a1"]
    assert [t.id for t in splits.dev] == ["b0"]


@pytest.mark.parametrize(
    ("pool", "counts", "message"),
    [
        (_tasks(3) + _tasks(1), COUNTS, "duplicate task ids: t0"),
        (_tasks(5), COUNTS, "ask for 9 tasks .* the pool has 5"),
        (_tasks(2, split="validation"), None, "unknown split name"),
        (_tasks(3), None, "no split_counts"),
    ],
    ids=["duplicates", "too-few", "bad-split-name", "no-counts"],
)
def test_bad_pools_are_refused_naming_the_ids(pool, counts, message):
    with pytest.raises(BenchmarkError, match=message):
        make_splits(pool, counts, seed=0)


def test_the_same_text_under_two_ids_cannot_straddle_splits():
    twin = Task(
        id="twin", instruction="a text 0", verifier={"label": "a"}, metadata={"split": "dev"}
    )
    pool = [*_tasks(1, "a", split="train"), twin]
    pool[0] = Task(
        id="a0", instruction="a text 0", verifier={"label": "a"}, metadata={"split": "train"}
    )

    with pytest.raises(BenchmarkError, match=r"train overlaps dev/test: a0 \(same content\)"):
        make_splits(pool, None, seed=0)


def test_tasks_of_one_dataset_may_share_a_question_text_or_an_instruction_across_splits(
    tmp_path,
):
    """Seed 001: the default splits keep train apart from dev/test by task, not by question
    text. The same text with another label, and one instruction over two environments (two
    Harbor task folders, whose tests live in the folder), are different tasks."""
    folders = [tmp_path / name for name in ("env-a", "env-b")]
    for folder in folders:
        folder.mkdir()
    pool = [
        Task(id="a", instruction="same text", verifier={"label": "x"}, metadata={"split": "train"}),
        Task(id="b", instruction="same text", verifier={"label": "y"}, metadata={"split": "test"}),
        *(
            Task(
                id=f"h{i}", instruction="Fix the build.", environment=folder, metadata={"split": s}
            )
            for i, (folder, s) in enumerate(zip(folders, ("train", "dev"), strict=True))
        ),
    ]

    splits = make_splits(pool, None, seed=0)

    assert [t.id for t in splits.train] == ["a", "h0"] and [t.id for t in splits.dev] == ["h1"]


def test_evolution_data_replaces_train_and_must_not_overlap():
    splits = make_splits(_tasks(12), COUNTS, seed=0)
    fresh = _tasks(5, "evo")

    replaced = replace_train(splits, fresh, limit=3, source="evo.jsonl")
    assert [t.id for t in replaced.train] == ["evo0", "evo1", "evo2"]
    assert replaced.dev == splits.dev

    leaked = [*fresh, Task(id="new-id", instruction=splits.dev[0].instruction, verifier={})]
    with pytest.raises(
        BenchmarkError, match=r"evo.jsonl overlaps dev/test: new-id \(same instruction\)"
    ):
        replace_train(splits, leaked, limit=None, source="evo.jsonl")
    with pytest.raises(BenchmarkError, match=r"same id"):
        replace_train(splits, [splits.unseal_test()[0]], limit=None, source="evo.jsonl")


def test_evolution_data_must_not_share_a_held_out_tasks_environment_image():
    pool = [
        Task(id=f"t{i}", instruction=f"t {i}", verifier={}, metadata={"image": f"img-t{i}"})
        for i in range(12)
    ]
    splits = make_splits(pool, COUNTS, seed=0)
    image = splits.dev[0].metadata["image"]
    fresh = Task(id="evo0", instruction="new", verifier={}, metadata={"image": "img-evo0"})
    reused = Task(id="evo1", instruction="other", verifier={}, metadata={"image": image})

    assert replace_train(splits, [fresh], limit=None, source="evo").train == (fresh,)
    with pytest.raises(BenchmarkError, match=r"evo overlaps dev/test: evo1 \(same image\)"):
        replace_train(splits, [fresh, reused], limit=None, source="evo")


def test_an_empty_train_split_is_refused_where_one_is_required():
    splits = make_splits(_tasks(5), SplitCounts(train=0, dev=3, test=2), seed=0)

    with pytest.raises(BenchmarkError, match="the train split is empty"):
        splits.require("train")
    assert len(splits.require("dev")) == 3
