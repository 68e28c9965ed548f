"""The integrity chain: every framework write is an entry; a folder that does not match its
chain is refused naming the file; a crash at any point of a write leaves a folder that
verifies, and the next writer settles it."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from flashrsi_dagster.records import IntegrityError, RecordStore, Redactor, Trajectory, journal
from flashrsi_dagster.records.chain import CHAIN, GENESIS, HEAD, Entry, state_of
from flashrsi_dagster.rollouts.record import RolloutRecord


def _trajectory(task_id: str, score: float = 0.5) -> Trajectory:
    return Trajectory(task_id=task_id, snapshot_id="s", status="success", score=score)


@pytest.fixture(autouse=True)
def new_process(monkeypatch: pytest.MonkeyPatch):
    """What a process remembers of each chain, emptied; call it to act as a new process."""

    def restart() -> None:
        monkeypatch.setattr(journal, "_lives", {})

    restart()
    return restart


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An experiment folder as the framework leaves it: a record, rollouts, a moved and a
    removed file, and an IO-manager value."""
    root = tmp_path / "exp"
    store = RecordStore(root, Redactor(environ={}))
    store.write(root / "run_meta.json", _trajectory("meta"))
    rollouts = RolloutRecord(root / "records" / "mh" / "round-001-dev.jsonl", store)
    for i in range(4):
        rollouts.append(_trajectory(f"t{i}"))
    store.write(root / "records" / "mh" / "round-001.json", _trajectory("round", 0.5))
    store.write_bytes(root / "records" / "mh" / "old.json", b"{}\n")
    store.move(root / "records" / "mh" / "old.json", root / "records" / "mh" / "old.replaced.json")
    store.write_bytes(root / "records" / "eval" / "gone.json", b"{}\n")
    store.remove(root / "records" / "eval" / "gone.json")
    store.write_bytes(root / "dagster" / "scores" / "round-001-c0.json", b'{"score": 0.5}')
    return root


def _problems(root: Path) -> list[str]:
    with pytest.raises(IntegrityError) as info:
        RecordStore(root, Redactor(environ={})).verify()
    return info.value.problems


def _verify(root: Path) -> None:
    RecordStore(root, Redactor(environ={})).verify()


def test_an_untouched_folder_verifies_in_this_process_and_a_new_one(home, new_process):
    _verify(home)
    new_process()
    _verify(home)
    entries = [json.loads(line) for line in (home / CHAIN).read_text().splitlines()]
    assert [e["op"] for e in entries] == ["write"] + ["append"] * 4 + [
        "write",
        "write",
        "move",
        "write",
        "remove",
        "write",
    ]
    assert [e["seq"] for e in entries] == list(range(1, 12))
    assert entries[0]["prev"] == GENESIS
    assert all(b["prev"] == a["hash"] for a, b in itertools.pairwise(entries))
    assert (home / HEAD).read_text().split() == [f"{11:012d}", entries[-1]["hash"]]


def test_a_changed_score_is_refused_even_with_the_same_size_and_mtime(home, new_process):
    record = home / "records" / "mh" / "round-001.json"
    before = record.stat()
    text = record.read_text()
    assert '"score": 0.5' in text
    record.write_text(text.replace('"score": 0.5', '"score": 1.0'))
    os.utime(record, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert record.stat().st_size == before.st_size

    for _ in range(2):  # the writing process, then a new one
        assert _problems(home) == [
            "records/mh/round-001.json: content changed since the framework wrote it "
            "(chain entry 6)"
        ]
        new_process()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda h: (h / "run_meta.json").write_text("{}"),
            "run_meta.json: content changed since the framework wrote it (chain entry 1)",
        ),
        (
            lambda h: (h / "records/mh/round-001.json").unlink(),
            "records/mh/round-001.json: record missing (the framework wrote it at chain entry 6)",
        ),
        (
            lambda h: (h / "records/mh/round-002.json").write_text("{}"),
            "records/mh/round-002.json: added outside the chain",
        ),
        (
            lambda h: (h / "dagster/scores/round-002-c0.json").write_text("{}"),
            "dagster/scores/round-002-c0.json: added outside the chain",
        ),
        (
            lambda h: (h / "records/eval/gone.json").write_text("{}\n"),
            "records/eval/gone.json: added outside the chain (the framework removed it at "
            "chain entry 10)",
        ),
        (
            lambda h: (h / "records/mh/old.replaced.json").write_text("[]\n"),
            "records/mh/old.replaced.json: content changed since the framework wrote it "
            "(chain entry 8)",
        ),
        (
            lambda h: (h / "dagster/scores/round-001-c0.json").write_text('{"score": 1.0}'),
            "dagster/scores/round-001-c0.json: content changed since the framework wrote it "
            "(chain entry 11)",
        ),
    ],
    ids=["run_meta", "deleted", "added", "added_value", "resurrected", "moved", "value"],
)
def test_each_kind_of_tampering_is_refused_naming_the_file(home, change, problem):
    change(home)

    assert _problems(home) == [problem]


def test_a_truncated_rollout_record_is_refused_saying_how_many_lines_are_missing(home):
    path = home / "records/mh/round-001-dev.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))

    assert _problems(home) == [
        "records/mh/round-001-dev.jsonl: truncated: the last 2 appended line(s) are missing "
        "(it holds what chain entry 3 recorded, not chain entry 5)"
    ]


def test_a_changed_line_in_a_rollout_record_is_refused(home):
    path = home / "records/mh/round-001-dev.jsonl"
    path.write_text(path.read_text().replace('"score": 0.5', '"score": 1.0', 1))

    problems = _problems(home)

    assert problems == [
        "records/mh/round-001-dev.jsonl: content changed since the framework wrote it "
        "(chain entry 5)"
    ]


def _forge(home: Path) -> list[bytes]:
    """A chain written from scratch for the files as they are now: every link consistent."""
    lines, prev = [], GENESIS
    for seq, rel in enumerate(["run_meta.json", "records/mh/round-001.json"], start=1):
        state = state_of(home / rel)
        entry = Entry(
            seq=seq, op="write", path=rel, sha256=state.sha256, size=state.size, at="x", prev=prev
        ).sealed()
        lines.append(entry.line())
        prev = entry.hash
    return lines


def _tamper_and_forge(home: Path) -> list[bytes]:
    (home / "records/mh/round-001.json").write_text('{"score": 1.0}\n')
    for folder in ("records/mh", "records/eval", "dagster"):
        for path in (home / folder).rglob("*"):
            if path.is_file() and path.name != "round-001.json":
                path.unlink()
    lines = _forge(home)
    (home / CHAIN).write_bytes(b"".join(lines))
    return lines


def test_a_chain_rewritten_from_scratch_is_refused_by_its_head(home, new_process):
    _tamper_and_forge(home)
    new_process()

    problems = _problems(home)

    assert len(problems) == 1
    assert problems[0].startswith(f"{HEAD}: names entry 11")
    assert "rewritten or extended outside the framework" in problems[0]


def test_a_chain_and_head_rewritten_while_the_framework_runs_are_refused_by_its_memory(home):
    lines = _tamper_and_forge(home)
    last = Entry.parse(lines[-1])
    (home / HEAD).write_text(f"{last.seq:012d} {last.hash}\n")
    store = RecordStore(home, Redactor(environ={}))

    with pytest.raises(IntegrityError, match="rewritten while the experiment ran"):
        store.verify()
    with pytest.raises(IntegrityError, match="rewritten while the experiment ran"):
        store.write_bytes(home / "records/mh/promotion.json", b"{}")


def test_a_rewrite_under_a_running_framework_says_what_it_expected_and_what_it_found(home):
    """The refusal carries what finding the writer needs: the entry this process expected
    and where, what the chain holds there and last, and a chain file replaced whole."""
    store = RecordStore(home, Redactor(environ={}))
    before = (home / CHAIN).read_bytes()
    store.write_bytes(home / "records/mh/promotion.json", b"{}")
    copy = home / "records" / "chain.copy"
    copy.write_bytes(before)
    copy.replace(home / CHAIN)  # an older copy put over it, as a folder copy would

    with pytest.raises(IntegrityError) as refused:
        store.write_bytes(home / "records/mh/test.json", b"{}")

    problem = refused.value.problems[0]
    assert problem.startswith(f"{CHAIN}: entry 12 is not the one this process wrote or read")
    assert "expected entry 12 (write records/mh/promotion.json at " in problem
    assert f"the chain now: {len(before)} bytes, there: nothing" in problem
    assert "its last line: entry 11 (write dagster/scores/round-001-c0.json at " in problem
    assert "the expected line is nowhere in it" in problem
    assert "the chain file was replaced: (device, inode)" in problem


@pytest.mark.parametrize("after", [False, True], ids=["before-the-entry", "after-it"])
def test_bytes_appended_to_the_chain_by_another_writer_are_refused_as_the_entry_is_written(
    home, monkeypatch, after
):
    """Something holding a descriptor of the chain without its lock (another file's
    descriptor gone astray: a closed number reused) appends a byte while an entry is
    written. Refused at that write, naming the byte; before, the next write refused the
    chain as rewritten (the entry was no longer at its place), naming nothing."""
    real = journal._write_all

    def and_a_stray_byte(fd: int, data: bytes) -> None:
        if not after:
            _stray(home)
        real(fd, data)
        if after:
            _stray(home)

    store = RecordStore(home, Redactor(environ={}))
    end = (home / CHAIN).stat().st_size
    monkeypatch.setattr(journal, "_write_all", and_a_stray_byte)
    with pytest.raises(IntegrityError) as refused:
        store.write_bytes(home / "records/mh/promotion.json", b"{}")

    assert refused.value.problems == [
        f"{CHAIN}: +1 byte(s) at byte {end} as it was written (entry 12): b'\\x11': "
        "something other than the framework writes the chain"
    ]


def _stray(home: Path) -> None:
    with open(home / CHAIN, "ab") as chain:  # O_APPEND, as the chain's own descriptors
        chain.write(b"\x11")


def test_an_entry_appended_outside_the_framework_is_refused(home, new_process):
    """A valid next entry for a changed file, with the head left alone."""
    record = home / "records/mh/round-001.json"
    record.write_text('{"score": 1.0}\n')
    lines = (home / CHAIN).read_bytes().splitlines(keepends=True)
    last, state = Entry.parse(lines[-1]), state_of(record)
    forged = Entry(
        seq=last.seq + 1,
        op="write",
        path="records/mh/round-001.json",
        sha256=state.sha256,
        size=state.size,
        at="x",
        prev=last.hash,
    ).sealed()
    with open(home / CHAIN, "ab") as chain:
        chain.write(forged.line())
    new_process()

    assert _problems(home) == [
        f"records/mh/round-001.json: changed by chain entry 12, which {HEAD} does not cover: "
        "the chain was extended outside the framework"
    ]
    with pytest.raises(IntegrityError, match="extended outside the framework"):
        RecordStore(home, Redactor(environ={})).write_bytes(home / "records/x.json", b"{}")


def test_a_broken_link_and_a_missing_head_are_refused(home, new_process):
    text = (home / CHAIN).read_text()
    (home / CHAIN).write_text(text.replace('"at":"', '"at":"1', 1))
    assert _problems(home) == [f"{CHAIN}: entry 1 broken: its hash does not match its content"]

    (home / CHAIN).write_text(text)
    (home / HEAD).unlink()
    assert _problems(home) == [f"{HEAD}: missing or unreadable, while {CHAIN} ends at entry 11"]


def test_a_folder_written_before_records_were_chained_is_refused(tmp_path):
    (tmp_path / "exp" / "records").mkdir(parents=True)
    (tmp_path / "exp" / "run_meta.json").write_text("{}")
    store = RecordStore(tmp_path / "exp", Redactor(environ={}))

    with pytest.raises(IntegrityError, match=r"chain\.jsonl: missing or empty, yet 1 covered"):
        store.verify()
    with pytest.raises(IntegrityError, match="written before records were chained"):
        store.write_bytes(tmp_path / "exp" / "records" / "a.json", b"{}")


def test_the_framework_refuses_to_append_to_a_changed_record(home, new_process):
    new_process()
    path = home / "records/mh/round-001-dev.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"score": 0.5', b'"score": 1.0', 1))
    store = RecordStore(home, Redactor(environ={}))

    with pytest.raises(IntegrityError, match="refusing to append to it"):
        RolloutRecord(path, store).append(_trajectory("t9"))


def test_concurrent_writers_in_threads_and_processes_keep_one_chain(tmp_path, new_process):
    root = tmp_path / "exp"
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from flashrsi_dagster.records import RecordStore, Redactor
        root, name = Path(sys.argv[1]), sys.argv[2]
        store = RecordStore(root, Redactor(environ={}))
        for i in range(40):
            store.append_line(root / "records" / f"{name}.jsonl", f"{i}\\n".encode())
        """
    )
    others = [
        subprocess.Popen([sys.executable, "-c", script, str(root), f"p{n}"]) for n in range(2)
    ]
    store = RecordStore(root, Redactor(environ={}))
    threads = [
        threading.Thread(
            target=lambda n=n: [
                store.append_line(root / "records" / f"t{n}.jsonl", b"x\n") for _ in range(40)
            ]
        )
        for n in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [p.wait(timeout=60) for p in others] == [0, 0]

    _verify(root)
    new_process()
    _verify(root)
    assert len((root / CHAIN).read_text().splitlines()) == 5 * 40


_CRASH = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from flashrsi_dagster.records import RecordStore, Redactor, journal

    root, op, point = Path(sys.argv[1]), sys.argv[2], sys.argv[3]

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    def half(write):
        def torn(target, data):
            write(target, data[: len(data) // 2])
            die()
        return torn

    if point == "mid-entry":
        journal._write_all = half(journal._write_all)
    elif point == "before-head":
        journal._write_head = die
    elif point == "before-file":
        journal.write_bytes_atomic = journal._append = die
    elif point == "mid-line":
        def torn_append(path, line):
            with open(path, "ab") as handle:
                handle.write(line[: len(line) // 2])
            die()
        journal._append = torn_append
    store = RecordStore(root, Redactor(environ={}))
    if op == "append":
        store.append_line(root / "records" / "r.jsonl", b'{"line": 3}\\n')
    else:
        store.write_bytes(root / "records" / "round.json", b'{"score": 0.75}\\n')
    """
)


@pytest.mark.parametrize(
    ("op", "point"),
    [
        ("append", "mid-entry"),
        ("append", "before-head"),
        ("append", "before-file"),
        ("append", "mid-line"),
        ("write", "before-head"),
        ("write", "before-file"),
    ],
)
def test_a_sigkill_anywhere_in_a_write_leaves_a_folder_that_verifies_and_settles(
    tmp_path, op, point
):
    root = tmp_path / "exp"
    store = RecordStore(root, Redactor(environ={}))
    store.append_line(root / "records" / "r.jsonl", b'{"line": 1}\n')
    store.append_line(root / "records" / "r.jsonl", b'{"line": 2}\n')
    store.write_bytes(root / "records" / "round.json", b'{"score": 0.5}\n')
    before = {p: (root / "records" / p).read_bytes() for p in ("r.jsonl", "round.json")}

    child = subprocess.run([sys.executable, "-c", _CRASH, str(root), op, point])
    assert child.returncode == -9

    journal._lives.clear()  # this process, too, starts afresh after the crash
    _verify(root)  # a resume accepts what the crash left
    store = RecordStore(root, Redactor(environ={}))
    store.append_line(root / "records" / "r.jsonl", b'{"line": 4}\n')  # settles, then writes
    _verify(root)
    journal._lives.clear()
    _verify(root)

    lines = (root / "records" / "r.jsonl").read_bytes().splitlines()
    assert lines == [b'{"line": 1}', b'{"line": 2}', b'{"line": 4}']
    assert (root / "records" / "round.json").read_bytes() == before["round.json"]
    ops = [json.loads(line)["op"] for line in (root / CHAIN).read_text().splitlines()]
    reverted = point != "mid-entry"  # a torn entry never was one: it is cut, not reverted
    assert ops[3:] == (["append" if op == "append" else "write", "revert"] if reverted else []) + [
        "append"
    ]


def test_a_move_onto_an_existing_record_is_refused_and_changes_nothing(home):
    folder = home / "records" / "mh"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    chain = (home / CHAIN).read_bytes()

    with pytest.raises(FileExistsError, match=r"old\.replaced\.json exists"):
        RecordStore(home, Redactor(environ={})).move(
            folder / "round-001.json", folder / "old.replaced.json"
        )

    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert (home / CHAIN).read_bytes() == chain
    _verify(home)
