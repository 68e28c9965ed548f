"""The snapshot store: seeds, child commits, refusals, no-ops, checkouts, diffs and history."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
from pathlib import Path

import git
import pytest

from flashrsi_dagster.records import REDACTED, Redactor
from flashrsi_dagster.scratch import process_space
from flashrsi_dagster.snapshots import HISTORY_DIR, Components, SnapshotError, SnapshotStore
from tests.conftest import PATIENCE, wait_until, write_harness

BINARY = bytes(range(256)) * 64 + b"\x00\r\n\x1a"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode) & 0o111


def test_seed_captures_only_declared_files(store, make_harness):
    seed = store.create_seed(make_harness())

    files = store._git("ls-tree", "-r", "--name-only", seed.tree).split()
    assert sorted(files) == [
        "prompts/system.md",
        "runtime/agent.py",
        "runtime/run.sh",
        "skills/labels/SKILL.md",
    ]
    assert seed.parent_id is None
    assert seed.components.roles["prompt"] == ("prompts/**",)


def test_snapshot_is_a_real_git_commit_and_its_id_is_stable(store, make_harness):
    seed = store.create_seed(make_harness(), message="seed", metadata={"round": 0})

    repo = git.Repo(store.root)
    assert repo.commit(seed.id).hexsha == seed.id
    reopened = SnapshotStore(store.root)
    assert reopened.get(seed.id) == seed
    assert reopened.get(seed.id[:12]) == seed
    assert reopened.get(seed.id).metadata == {"round": 0}


def test_checkout_round_trips_binary_bytes_and_executable_bits(store, make_harness, tmp_path):
    harness = make_harness(
        {"runtime/blob.bin": BINARY, "runtime/tool": "#!/bin/sh\n", "prompts/crlf.md": "a\r\nb\r\n"}
    )
    os.chmod(harness / "runtime/tool", 0o755)
    seed = store.create_seed(harness)

    out = store.check_out(seed, tmp_path / "out")

    assert (out / "runtime/blob.bin").read_bytes() == BINARY
    assert (out / "prompts/crlf.md").read_bytes() == b"a\r\nb\r\n"
    assert _mode(out / "runtime/tool") == 0o111
    assert _mode(out / "runtime/blob.bin") == 0
    assert store.read_file_at(seed, "runtime/blob.bin") == BINARY


def test_edit_becomes_a_child_commit_with_changed_paths_and_diff(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    (work / "prompts/system.md").write_text("You are a very careful classifier.\n")
    (work / "skills/new/SKILL.md").parent.mkdir(parents=True)
    (work / "skills/new/SKILL.md").write_text("new skill\n")
    (work / "runtime/run.sh").unlink()

    outcome = store.commit_child(seed, work, message="sharpen prompt", metadata={"step": 1})

    assert outcome.status == "committed"
    child = outcome.snapshot
    assert child.parent_id == seed.id
    assert git.Repo(store.root).commit(child.id).parents[0].hexsha == seed.id
    assert {(c.status, c.path) for c in outcome.changed} == {
        ("M", "prompts/system.md"),
        ("A", "skills/new/SKILL.md"),
        ("D", "runtime/run.sh"),
    }
    assert store.changed_paths(seed, child) == list(outcome.changed)
    diff = store.diff(seed, child)
    assert "-You are a careful classifier." in diff
    assert "+You are a very careful classifier." in diff
    assert "+++ b/skills/new/SKILL.md" in diff
    stats = store.diff_stats(seed, child)
    assert (stats.files, stats.insertions, stats.deletions) == (3, 2, 3)


def test_diff_command_prints_the_diff_in_a_shell(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    (work / "prompts/system.md").write_text("You are a very careful classifier.\n")
    child = store.commit_child(seed, work, message="sharpen prompt").snapshot

    command = store.diff_command(seed, child.id[:12])

    printed = subprocess.run(command, shell=True, capture_output=True, text=True, check=True)
    assert printed.stdout == store.diff(seed, child)


def test_executable_bit_change_alone_is_an_edit(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    os.chmod(work / "runtime/agent.py", 0o755)

    outcome = store.commit_child(seed, work, message="make executable")

    assert outcome.status == "committed"
    again = store.check_out(outcome.snapshot, tmp_path / "again")
    assert _mode(again / "runtime/agent.py") == 0o111


def test_unchanged_checkout_is_a_noop_and_creates_nothing(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    (work / "prompts/system.md").write_text("changed\n")
    (work / "prompts/system.md").write_text("You are a careful classifier.\n")
    (work / "runtime/__pycache__").mkdir()
    (work / "runtime/__pycache__/agent.cpython-312.pyc").write_bytes(b"\x00cache")

    outcome = store.commit_child(seed, work, message="nothing really")

    assert outcome.status == "noop"
    assert outcome.snapshot is None
    assert "identical" in outcome.reason
    assert [s.id for s in store.history()] == [seed.id]


@pytest.mark.parametrize(
    ("edit", "path", "reason"),
    [
        (lambda w: (w / "notes.txt").write_text("x"), "notes.txt", "not a declared"),
        (lambda w: (w / "runtime/.git").mkdir(), "runtime/.git", "git metadata"),
        (lambda w: (w / ".git").write_text("gitdir: /tmp/x"), ".git", "git metadata"),
        (
            lambda w: (w / "prompts/.gitattributes").write_text("* filter=x"),
            "prompts/.gitattributes",
            "git metadata",
        ),
        (
            lambda w: os.symlink("/etc/passwd", w / "prompts/link.md"),
            "prompts/link.md",
            "absolute path",
        ),
        (
            lambda w: os.symlink("../../outside.md", w / "prompts/up.md"),
            "prompts/up.md",
            "outside the harness",
        ),
        (
            lambda w: (w / "prompts/big.md").write_bytes(b"x" * 2049),
            "prompts/big.md",
            "over the limit",
        ),
        (lambda w: os.mkfifo(w / "prompts/pipe"), "prompts/pipe", "not a regular file"),
        (
            lambda w: os.symlink("missing.md", w / "prompts/gone.md"),
            "prompts/gone.md",
            "dangling symlink: its target prompts/missing.md is no file or folder",
        ),
        (
            lambda w: os.symlink("../README.md", w / "prompts/readme.md"),
            "prompts/readme.md",
            "dangling symlink",  # the undeclared file is not part of the snapshot
        ),
        (
            lambda w: os.symlink("loop.md", w / "prompts/loop.md"),
            "prompts/loop.md",
            "symlink loop",
        ),
        (
            lambda w: os.symlink("../.history", w / "prompts/history"),
            "prompts/history",
            "symlink into the reserved folder .history",
        ),
        (
            lambda w: os.symlink("../.history/trajectories/round-1/dev", w / "prompts/dev"),
            "prompts/dev",
            "symlink into the reserved folder .history",
        ),
    ],
    ids=[
        "undeclared",
        "nested-git",
        "git-file",
        "gitattributes",
        "abs-symlink",
        "escaping-symlink",
        "too-big",
        "fifo",
        "dangling-symlink",
        "symlink-to-undeclared",
        "symlink-loop",
        "symlink-to-history",
        "symlink-into-history",
    ],
)
def test_unsafe_edits_are_refused_with_a_reason(make_harness, tmp_path, edit, path, reason):
    store = SnapshotStore(tmp_path / "store", max_file_bytes=2048)
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    (work / "prompts/system.md").write_text("a legitimate edit alongside\n")
    objects_before = sorted(p.name for p in (store.root / "objects").rglob("*") if p.is_file())
    edit(work)

    outcome = store.commit_child(seed, work, message="bad")

    assert outcome.status == "refused"
    assert [r.path for r in outcome.refusals] == [path]
    assert reason in outcome.reason
    assert [s.id for s in store.history()] == [seed.id]
    objects_after = sorted(p.name for p in (store.root / "objects").rglob("*") if p.is_file())
    assert objects_after == objects_before


def test_symlink_inside_the_harness_is_kept(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    os.symlink("../prompts/system.md", work / "runtime/system.md")

    outcome = store.commit_child(seed, work, message="link")

    assert outcome.status == "committed"
    out = store.check_out(outcome.snapshot, tmp_path / "out")
    assert os.readlink(out / "runtime/system.md") == "../prompts/system.md"


def test_a_symlink_into_the_lent_history_is_refused_while_the_history_is_there(
    store, make_harness, tmp_path
):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    (work / HISTORY_DIR / "snapshots").mkdir(parents=True)
    (work / HISTORY_DIR / "index.json").write_text("{}\n")
    os.symlink(f"../{HISTORY_DIR}/index.json", work / "prompts/index.md")

    outcome = store.commit_child(seed, work, message="peek")

    assert outcome.status == "refused"
    assert "prompts/index.md: symlink into the reserved folder .history" in outcome.reason
    assert [s.id for s in store.history()] == [seed.id]


def test_a_symlink_may_reach_its_target_through_a_symlinked_folder(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    os.symlink("../skills", work / "runtime/skills")
    os.symlink("../runtime/skills/labels/SKILL.md", work / "prompts/labels.md")

    outcome = store.commit_child(seed, work, message="links")

    assert outcome.status == "committed", outcome.reason


def test_an_edit_over_the_total_size_limit_is_refused_though_each_file_fits(make_harness, tmp_path):
    # The attack, scaled down: many files each under the per-file limit.
    store = SnapshotStore(tmp_path / "store", max_file_bytes=4096, max_total_bytes=16_384)
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    for n in range(5):
        (work / f"runtime/chunk-{n}.bin").write_bytes(bytes(4000))

    outcome = store.commit_child(seed, work, message="bulk")

    assert outcome.status == "refused"
    assert [r.path for r in outcome.refusals] == ["."]
    assert "over the snapshot limit of 16384 (max_total_bytes)" in outcome.reason
    assert [s.id for s in store.history()] == [seed.id]


def test_a_seed_over_the_total_size_limit_is_refused(make_harness, tmp_path):
    harness = make_harness({f"prompts/p{n}.md": "x" * 600 for n in range(4)})

    with pytest.raises(SnapshotError, match=r"\.: the harness files total 2400 bytes"):
        SnapshotStore(tmp_path / "store", max_total_bytes=2000).create_seed(harness)


def test_the_default_limits_refuse_twenty_files_of_nine_mib(make_harness, tmp_path):
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    for n in range(20):
        with open(work / f"runtime/big-{n}.bin", "wb") as sparse:
            sparse.truncate(9 * 1024 * 1024)  # sparse: the size counts, not the disk used

    outcome = store.commit_child(seed, work, message="bulk")

    assert outcome.status == "refused"
    assert "(max_total_bytes)" in outcome.reason


@pytest.mark.parametrize("where", ["prompts/system.md", "skills/new/SKILL.md"])
def test_edit_holding_a_known_secret_is_refused_and_leaves_no_object(make_harness, tmp_path, where):
    secret = "s3cr3t-value-for-test-0042"
    store = SnapshotStore(tmp_path / "store", secret_filter=Redactor([secret], environ={}))
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    (work / where).parent.mkdir(parents=True, exist_ok=True)
    (work / where).write_text(f"use key {secret}\n")

    outcome = store.commit_child(seed, work, message="leak")

    assert outcome.status == "refused"
    assert [r.path for r in outcome.refusals] == [where]
    assert "secret" in outcome.reason
    dump = store._git("cat-file", "--batch-all-objects", "--batch")
    assert secret not in dump


SECRET = "s3cr3t-value-for-test-0042"
ENCODED = {
    "base64": (base64.b64encode, "base64"),
    "base64-url-unpadded": (lambda s: base64.urlsafe_b64encode(s).rstrip(b"="), "base64"),
    "base64-inside-a-blob": (lambda s: base64.b64encode(BINARY[:7] + s + b"tail"), "base64"),
    "hex": (lambda s: s.hex().encode(), "hex"),
    "HEX": (lambda s: s.hex().upper().encode(), "hex"),
    "reversed": (lambda s: s[::-1], "reversed"),
    "url-every-byte": (lambda s: "".join(f"%{b:02X}" for b in s).encode(), "URL encoding"),
}


def _guarded(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "store", secret_filter=Redactor([SECRET], environ={}))


@pytest.mark.parametrize(("encode", "encoding"), ENCODED.values(), ids=ENCODED.keys())
def test_edit_holding_an_encoded_secret_is_refused_naming_path_and_encoding(
    make_harness, tmp_path, encode, encoding
):
    store = _guarded(tmp_path)
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    encoded = encode(SECRET.encode())
    (work / "runtime/blob.bin").write_bytes(b"payload = '" + encoded + b"'\n")

    outcome = store.commit_child(seed, work, message="leak")

    assert outcome.status == "refused"
    assert outcome.reason == (
        f"runtime/blob.bin: its content holds the value of a secret ({encoding}); "
        "credentials never enter a snapshot, plain or encoded"
    )
    dump = store._git("cat-file", "--batch-all-objects", "--batch")
    assert encoded.decode() not in dump


def test_a_secret_in_a_file_name_is_refused_and_not_echoed(make_harness, tmp_path):
    store = _guarded(tmp_path)
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    name = SECRET.encode().hex()
    (work / f"prompts/{name}.md").write_text("harmless\n")

    outcome = store.commit_child(seed, work, message="leak")

    assert outcome.status == "refused"
    assert [r.path for r in outcome.refusals] == [f"prompts/{REDACTED}.md"]
    assert "its name holds the value of a secret (hex)" in outcome.reason
    assert name not in outcome.reason


def test_a_seed_holding_an_encoded_secret_is_refused(make_harness, tmp_path):
    encoded = base64.b64encode(b"key=" + SECRET.encode()).decode()
    harness = make_harness({"prompts/system.md": f"auth: {encoded}\n"})

    with pytest.raises(
        SnapshotError, match=r"prompts/system.md: its content .* \(base64\)"
    ) as info:
        _guarded(tmp_path).create_seed(harness)

    assert encoded not in str(info.value) and SECRET not in str(info.value)


def test_encoded_secrets_in_the_message_and_metadata_are_redacted(make_harness, tmp_path):
    store = _guarded(tmp_path)
    encoded = base64.b64encode(SECRET.encode()).decode()

    seed = store.create_seed(
        make_harness(), message=f"seed {encoded}", metadata={"note": SECRET[::-1]}
    )

    raw = store._git("cat-file", "commit", seed.id)
    assert encoded not in raw and SECRET[::-1] not in raw
    assert seed.message.startswith(f"seed {REDACTED}")
    assert seed.metadata == {"note": REDACTED}


def test_committing_from_a_checkout_of_another_snapshot_uses_the_parent_tree(
    store, make_harness, tmp_path
):
    seed = store.create_seed(make_harness())
    work = store.check_out(seed, tmp_path / "work")
    (work / "prompts/system.md").write_text("v1\n")
    first = store.commit_child(seed, work, message="v1").snapshot
    (work / "prompts/system.md").write_text("v2\n")

    # Declared as a child of the seed although the folder was last committed as `first`.
    second = store.commit_child(seed, work, message="v2 from seed")

    assert second.snapshot.parent_id == seed.id
    assert store.changed_paths(seed, second.snapshot)[0].path == "prompts/system.md"
    assert store.read_file_at(first, "prompts/system.md") == b"v1\n"
    assert store.read_file_at(second.snapshot, "prompts/system.md") == b"v2\n"


def test_history_lists_snapshots_oldest_first_with_parents(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    ids = [seed.id]
    for step in range(3):
        work = store.check_out(seed, tmp_path / f"w{step}")
        (work / "prompts/system.md").write_text(f"step {step}\n")
        ids.append(store.commit_child(seed, work, message=f"step {step}").snapshot.id)

    history = store.history()

    assert [s.id for s in history] == ids
    assert [s.parent_id for s in history] == [None, seed.id, seed.id, seed.id]
    assert [s.message for s in history] == ["seed", "step 0", "step 1", "step 2"]
    assert store.parent_ids() == {s.id: s.parent_id for s in history}


def test_read_file_at_refuses_unsafe_or_missing_paths(store, make_harness):
    seed = store.create_seed(make_harness())

    for bad in ("/etc/passwd", "../x", "prompts/../../x"):
        with pytest.raises(SnapshotError, match="not allowed"):
            store.read_file_at(seed, bad)
    with pytest.raises(SnapshotError, match="not in snapshot"):
        store.read_file_at(seed, "prompts/none.md")
    with pytest.raises(SnapshotError, match="is a folder"):
        store.read_file_at(seed, "prompts")


def test_checkout_refuses_a_non_empty_destination(store, make_harness, tmp_path):
    seed = store.create_seed(make_harness())
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy/file").write_text("x")

    with pytest.raises(SnapshotError, match="new or empty folder"):
        store.check_out(seed, tmp_path / "busy")


def test_unknown_snapshot_ids_are_refused(store, make_harness):
    store.create_seed(make_harness())

    with pytest.raises(SnapshotError, match="no snapshot"):
        store.get("0" * 40)
    with pytest.raises(SnapshotError, match="not a snapshot id"):
        store.get("main")
    for path in ("../" * 13 + ".", "./" * 15 + "../../HEAD"):  # 40 characters, and they exist
        with pytest.raises(SnapshotError, match="not a snapshot id"):
            store.get(path)


def test_seed_refuses_an_unsafe_declared_file_and_an_empty_selection(store, make_harness):
    harness = make_harness()
    os.symlink("/etc/hostname", harness / "prompts/host.md")
    with pytest.raises(SnapshotError, match="absolute path"):
        store.create_seed(harness)

    empty = make_harness({"README.md": "nothing declared\n"}, name="empty")
    with pytest.raises(SnapshotError, match="no file matching"):
        store.create_seed(empty)


def test_seed_uses_explicit_components_and_skips_git_metadata(store, make_harness):
    harness = make_harness()
    (harness / ".git").mkdir()
    (harness / ".git/config").write_text("[core]\n")

    seed = store.create_seed(harness, Components.parse({"prompt": ["prompts/*.md"]}))

    assert store._git("ls-tree", "-r", "--name-only", seed.tree).split() == ["prompts/system.md"]


def test_reopening_the_store_sweeps_leftovers_of_dead_processes_of_this_host(store, tmp_path):
    child = subprocess.Popen(["true"])
    child.wait()
    here, tmp = process_space(), store.root / "tmp"
    orphan_index = tmp / f"index-{here}-{child.pid}-abcdef"
    orphan_objects = tmp / f"objects-{here}-{child.pid}-abcdef"
    orphan_index.write_bytes(b"DIRC")
    (orphan_objects / "ab").mkdir(parents=True)
    live_index = tmp / f"index-{here}-{os.getpid()}-abcdef"
    live_index.write_bytes(b"DIRC")
    # Another machine sharing the home: its pid is not "dead" here, whatever this host runs.
    elsewhere = tmp / f"index-other.0123abcd-{child.pid}-abcdef"
    elsewhere.write_bytes(b"DIRC")

    SnapshotStore(store.root)

    assert not orphan_index.exists() and not orphan_objects.exists()
    assert live_index.exists() and elsewhere.exists()


# -- several writers at once (candidates side by side, processes on one or several hosts) -----

WRITER = """
import os, sys, time
from pathlib import Path
from flashrsi_dagster.snapshots import SnapshotStore
root, go, name, count = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
(go.parent / f"ready-{name}-{os.getpid()}").touch()
while not go.exists():
    time.sleep(0.005)
store = SnapshotStore(root)
if name == "seed":
    print(store.create_seed(Path(sys.argv[5])).id, flush=True)
    sys.exit()
seed = [s for s in store.history() if s.parent_id is None][0]
for i in range(count):
    work = Path(sys.argv[5]) / f"{name}-{i}"
    store.check_out(seed, work)
    (work / "prompts/system.md").write_text(f"{name} edit {i}\\n")
    made = store.commit_child(seed, work, message=f"{name} {i}", metadata={"by": name})
    assert made.status == "committed", made.reason
    print(made.snapshot.id, flush=True)
"""

READER = """
import sys, time
from pathlib import Path
from flashrsi_dagster.snapshots import SnapshotStore
store, stop = SnapshotStore(Path(sys.argv[1])), Path(sys.argv[2])
seen, lists = set(), 0
while not stop.exists() or lists < 3:
    ids = {s.id for s in store.history()}
    assert seen <= ids, f"a listing lost {seen - ids}"
    for sid in sorted(ids - seen):
        fresh = SnapshotStore(Path(sys.argv[1])).get(sid)  # a store that never listed it
        store.read_file_at(fresh, "prompts/system.md")
    seen, lists = ids, lists + 1
print(len(seen), lists, flush=True)
"""


def _at_once(script: str, root: Path, tmp_path: Path, args: list[list[str]]) -> list[str]:
    """Run `script` in one process per argument list, released together; their outputs."""
    go = tmp_path / "go"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(root), str(go), *a], stdout=subprocess.PIPE
        )
        for a in args
    ]
    wait_until(
        lambda: len(list(tmp_path.glob("ready-*"))) == len(processes),
        "every interpreter started and polling",
    )
    go.touch()
    outputs = [p.communicate(timeout=PATIENCE)[0].decode() for p in processes]
    assert [p.returncode for p in processes] == [0] * len(processes)
    return outputs


def _fsck(root: Path) -> None:
    done = subprocess.run(
        ["git", f"--git-dir={root}", "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        check=False,
    )
    problems = [line for line in done.stderr.splitlines() if not line.startswith("notice:")]
    assert done.returncode == 0 and not problems, done.stderr  # bare: HEAD is never born


def test_four_processes_committing_at_once_lose_nothing_and_corrupt_nothing(
    store, make_harness, tmp_path
):
    seed = store.create_seed(make_harness())
    work = tmp_path / "work"
    outputs = _at_once(WRITER, store.root, tmp_path, [[f"w{n}", "5", str(work)] for n in range(4)])

    made = [line for out in outputs for line in out.split()]
    assert len(made) == len(set(made)) == 20
    fresh = SnapshotStore(store.root)
    assert {s.id for s in fresh.history()} == {seed.id, *made}
    for snapshot in fresh.history()[1:]:
        who, i = snapshot.message.split()
        assert snapshot.metadata == {"by": who} and snapshot.parent_id == seed.id
        assert fresh.read_file_at(snapshot, "prompts/system.md") == f"{who} edit {i}\n".encode()
    _fsck(store.root)
    assert list((store.root / "tmp").iterdir()) == []  # no temp index left behind


def test_seeding_from_several_processes_at_once_makes_one_seed(tmp_path):
    harness = write_harness(tmp_path / "harness", {"prompts/system.md": "be brief\n"})
    root = tmp_path / "fresh-store"  # not made yet: every process finds none
    outputs = _at_once(WRITER, root, tmp_path, [["seed", "0", str(harness)]] * 8)

    assert len({out.strip() for out in outputs}) == 1
    assert [s.id for s in SnapshotStore(root).history()] == [outputs[0].strip()]
    _fsck(root)


def test_history_and_get_read_through_snapshots_appearing_meanwhile(store, make_harness, tmp_path):
    store.create_seed(make_harness())
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store.root), str(stop)], stdout=subprocess.PIPE
    )
    try:
        _at_once(
            WRITER, store.root, tmp_path, [[f"w{n}", "4", str(tmp_path / "work")] for n in (1, 2)]
        )
    finally:
        stop.touch()
    out, _ = reader.communicate(timeout=PATIENCE)
    assert reader.returncode == 0
    assert out.split()[0] == b"9"  # the seed and 2 x 4 children, every one read


def test_a_ref_is_created_only_where_none_is(store, make_harness):
    seed = store.create_seed(make_harness())
    taken = store._git("commit-tree", seed.tree, stdin="another\n")
    store._git("update-ref", f"refs/snapshots/{taken}", seed.id)  # someone else's, on it

    with pytest.raises(SnapshotError, match="update-ref"):
        store._create_ref(taken)
    store._create_ref(seed.id)  # the same commit again: the one snapshot it is
    assert store._git("rev-parse", f"refs/snapshots/{taken}") == seed.id
