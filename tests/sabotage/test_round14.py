"""Sabotage, fourteenth red-team pass (issue 22): round 13's fixes attacked first, as a hostile
Worker and as a misbehaving endpoint or operator. The store's guard, which now follows a
link's target part by part and stops at `MAX_FILES` files, given a loop of two links and one
of one, targets with `//` and a trailing `/.`, a target that goes through a file or a folder
the snapshot does not hold (the kernel fails there; lexical folding does not), an absolute
link to the snapshot itself, a hard link to a file outside it, exactly `MAX_FILES` files and
one more, and folders or skipped files (`.pyc`) in their tens of thousands, which are no
files; the content check's names read alone, given honest names that are a label's digest or
as long as a name can be; the strict endpoint JSON given correct answers at a float's edges
(`1.7976931348623157e308`, `1E308`, `-0`, a 309-digit integer below the largest float, ids
as big integers, nesting at the bound); file names that are not UTF-8 or hold a newline; and
the config's model ids and endpoint URLs as providers write them (`llama3:8b`,
`org/model@rev`, Bedrock's `...-v1:0`, an upper-case scheme, an IPv6 host) beside ones that
validate and fail every call (port 0, a space in the host, a user and password the gateway
never sends).

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests. Of 56 cases, 11 got
through on main (7 holes): links through a file or a missing folder (3), folders and skipped
files past any bound (2), a folder nested past PATH_MAX (1), a file name that is not UTF-8
(1), an upper-case scheme refused (1), URLs no call can use (2), a password in the URL
written in clear (1).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.cli import main
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.gateway.answers import MAX_JSON_DEPTH, endpoint_json
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.snapshots.guard import MAX_ENTRIES, MAX_FILES, MAX_PATH_BYTES, scan
from tests.conftest import VALID
from tests.contamination.test_detector import append

# -- the store's guard: links followed part by part, and the file bound ---------------------


def _commit(tmp_path: Path, edit: Callable[[Path], None]):
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(HARNESS)
    folder = store.check_out(seed, tmp_path / "edit")
    edit(folder)
    return store.commit_child(seed, folder, message="attack")


def _links(*pairs: tuple[str, str]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        for path, target in pairs:
            os.symlink(target, folder / path)

    return edit


def _prompt(folder: Path) -> str:
    return next(str(p.relative_to(folder)) for p in sorted(folder.glob("prompts/*")) if p.is_file())


def _to_prompt(written: Callable[[str], str]) -> Callable[[Path], None]:
    """A link `runtime/p` whose target is `written` of the path of a prompt file."""

    def edit(folder: Path) -> None:
        os.symlink(written(f"../{_prompt(folder)}"), folder / "runtime" / "p")

    return edit


REFUSED: dict[str, tuple[Callable[[Path], None], str]] = {
    "a loop of two links": (
        _links(("runtime/a", "b"), ("runtime/b", "a")),
        "symlink loop",
    ),
    "a link to itself": (_links(("runtime/a", "a")), "symlink loop"),
    "a file's path with a trailing slash": (
        _to_prompt(lambda path: f"{path}/"),
        "runtime/p: dangling symlink",
    ),
    "through a file, then `..`": (
        _to_prompt(lambda path: f"{path}/../{path.rpartition('/')[2]}"),
        "runtime/p: dangling symlink",
    ),
    "through a folder the snapshot does not hold, then `..`": (
        _to_prompt(lambda path: f"nowhere/../{path}"),
        "runtime/p: dangling symlink",
    ),
    "an absolute link to the snapshot's own path": (
        lambda folder: os.symlink(folder / "prompts", folder / "runtime" / "p"),
        "runtime/p: symlink to an absolute path",
    ),
}


@pytest.mark.parametrize("shape", REFUSED)
def test_a_link_the_kernel_cannot_follow_is_refused(tmp_path: Path, shape):
    """Attack: links the round-13 guard follows part by part, where the kernel fails: a loop
    of two links and a link to itself, a file's path with a trailing `/` (ENOTDIR), a path
    through a file then `..` (ENOTDIR), a path through a folder the snapshot does not hold
    then `..` (ENOENT: lexical folding drops the missing folder), and an absolute link to the
    checkout itself (valid on this host only).
    Got through on main: the three that go through a file or a missing folder were committed
    as links to the prompt, dangling once checked out (the guard promises no link dangles: a
    harness can create the missing folder as a link at run time and aim the committed link
    elsewhere than the guard judged). Stops it: `_follow` fails a path whose part it steps
    through is no folder of the snapshot, as the kernel does."""
    edit, reason = REFUSED[shape]

    outcome = _commit(tmp_path, edit)

    assert outcome.snapshot is None, shape
    assert reason in (outcome.reason or ""), outcome.reason


KEPT: dict[str, Callable[[Path], None]] = {
    "`//` inside the target": _to_prompt(lambda path: path.replace("/", "//")),
    "a trailing `/.` on a folder": _links(("runtime/d", "../prompts/.")),
    "`./` before every part": _to_prompt(lambda path: "./" + path.replace("/", "/./")),
    "a folder's path with a trailing slash": _links(("runtime/d", "../prompts/")),
}


@pytest.mark.parametrize("shape", KEPT)
def test_an_honest_link_written_oddly_is_kept(tmp_path: Path, shape):
    """The honest shapes beside them: a link to a file of the snapshot written with `//`,
    `./`, or a folder's with a trailing `/.` or `/`, all of which the kernel follows."""
    outcome = _commit(tmp_path, KEPT[shape])

    assert outcome.snapshot is not None, outcome.reason


def test_a_hard_link_to_a_file_outside_is_committed_as_its_bytes(tmp_path: Path):
    """Attack: a hard link in the checkout to a file outside it (the Worker's own scratch
    file): no link is stored, only the bytes, which the content check reads like any file's.
    Held: the snapshot holds a regular file with the outside file's bytes, no link."""
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")

    outcome = _commit(tmp_path, lambda folder: os.link(outside, folder / "runtime" / "h.txt"))

    assert outcome.snapshot is not None, outcome.reason
    assert [c.path for c in outcome.changed] == ["runtime/h.txt"]


def _fill(folder: Path, count: int) -> None:
    many = folder / "skills" / "many"
    many.mkdir(parents=True)
    for n in range(count):
        (many / str(n)).touch()


def _scan(folder: Path):
    return scan(folder, lambda _: True, max_file_bytes=1 << 20, strict=True)


def test_exactly_max_files_is_kept_and_one_more_refused(tmp_path: Path):
    """The bound at its edge: a checkout of exactly `MAX_FILES` files is a snapshot; one more
    file and it is refused (folders are not files)."""
    store = SnapshotStore(tmp_path / "store")
    folder = store.check_out(store.create_seed(HARNESS), tmp_path / "edit")
    held = len(_scan(folder)[0])
    _fill(folder, MAX_FILES - held)

    entries, refusals = _scan(folder)
    assert (len(entries), refusals) == (MAX_FILES, [])

    (folder / "one-more").touch()
    assert "more than" in _scan(folder)[1][0].reason


def _folders(folder: Path) -> None:
    (folder / "skills").mkdir(exist_ok=True)
    for n in range(MAX_ENTRIES + 1):
        (folder / "skills" / f"d{n}").mkdir()


def _pycs(folder: Path) -> None:
    (folder / "skills").mkdir(exist_ok=True)
    for n in range(MAX_ENTRIES + 1):
        (folder / "skills" / f"f{n}.pyc").touch()


def _deep(folder: Path) -> None:
    """Folders nested past PATH_MAX (4096 bytes), made one `chdir` at a time as a shell does."""
    (folder / "skills").mkdir(exist_ok=True)
    here = os.open(folder / "skills", os.O_RDONLY)
    try:
        for _ in range(150):  # 150 x 31 bytes (fewer levels than `rmtree` recurses)
            os.mkdir("d" * 30, dir_fd=here)
            deeper = os.open("d" * 30, os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = deeper
        with open(os.open("x.md", os.O_WRONLY | os.O_CREAT, dir_fd=here), "w") as handle:
            handle.write("deep\n")
    finally:
        os.close(here)


WALKED: dict[str, tuple[Callable[[Path], None], str]] = {
    "twenty thousand and one empty folders": (_folders, f"more than {MAX_ENTRIES} entries"),
    "twenty thousand and one skipped `.pyc` files": (_pycs, f"more than {MAX_ENTRIES} entries"),
    "folders nested past PATH_MAX": (_deep, f"a path longer than {MAX_PATH_BYTES} bytes"),
}


@pytest.mark.parametrize("shape", WALKED)
def test_what_the_file_bound_does_not_count_is_bounded_too(tmp_path: Path, shape):
    """Attack: what the store walks but round 13's `MAX_FILES` did not count: empty folders
    (git stores none, yet the guard's walk and `git add` open each), files the store skips
    (`*.pyc`: walked and matched, never counted), and folders nested deeper than a path the
    kernel takes (4096 bytes: the walk's `scandir` of the full path fails).
    Got through on main: folders and skipped files, any number of them, were walked with no
    bound (a million stall every check as a million files did); the deep nest ended the
    commit in an `OSError` (File name too long) instead of a refusal naming it. Stops it:
    the walk counts every entry it meets against `MAX_ENTRIES` (twice `MAX_FILES`), refuses
    a folder whose path inside the snapshot is longer than `MAX_PATH_BYTES`, and a folder it
    cannot open is a refusal, not an exception."""
    edit, reason = WALKED[shape]

    outcome = _commit(tmp_path, edit)

    assert outcome.status == "refused", (shape, outcome.status)
    assert reason in (outcome.reason or ""), outcome.reason


def test_a_seed_folder_with_a_deep_undeclared_folder_is_still_a_seed(tmp_path: Path):
    """The operator's side of the bounds: a seed's source folder holding an undeclared folder
    nested past PATH_MAX (a tool's cache) is captured as before, the folder left out as
    undeclared files are; the bounds are for an edited checkout."""
    source = tmp_path / "source"
    shutil.copytree(HARNESS, source, ignore=shutil.ignore_patterns("__pycache__"))
    _deep(source)

    seed = SnapshotStore(tmp_path / "store").create_seed(source)

    assert seed.id


# -- the content check's names, read alone: honest names ------------------------------------

HONEST_NAMES: dict[str, Callable[[Path], None]] = {
    "sha256 of each label": lambda folder: [
        append(f"skills/cache/{hashlib.sha256(label.encode()).hexdigest()}", "x\n")(folder)
        for label in ("benign", "malicious", "injection")
    ],
    "md5 of each label, in a folder per label": lambda folder: [
        append(f"skills/{label}/{hashlib.md5(label.encode()).hexdigest()}.md", "x\n")(folder)
        for label in ("benign", "malicious")
    ],
    "a name of 250 characters": append(f"skills/{'notes-on-benign-prompts-' * 10}.md", "x\n"),
    "forty folders deep": append("skills/" + "level/" * 40 + "note.md", "x\n"),
}


@pytest.mark.parametrize("form", HONEST_NAMES)
def test_an_honest_file_named_by_a_labels_digest_is_not_rejected(content_check, form):
    """False positive: file names that are a digest of a label alone (a cache keyed by the
    class), a name as long as a file system takes, a path forty folders deep: the names read
    alone must not make a label or a long name evidence. Held."""
    verdict = content_check.judge(HONEST_NAMES[form])

    assert not verdict.contaminated, verdict


# -- the strict endpoint JSON: correct answers it must read ---------------------------------

BIG = str(int(1.7976931348623157e308))

CORRECT = {
    "the largest float": '{"x": 1.7976931348623157e308}',
    "1E308": '{"x": 1E308}',
    "-1.7976931348623157E+308": '{"x": -1.7976931348623157E+308}',
    "the largest float, one digit on that rounds to it": '{"x": 1.79769313486231575e308}',
    "-0": '{"x": -0}',
    "-0.0e-0": '{"x": -0.0e-0}',
    "the smallest subnormal": '{"x": 5e-324}',
    "a 309-digit integer, the largest float's value": f'{{"x": {BIG}}}',
    "its negative": f'{{"x": -{BIG}}}',
    "a 64-bit id and one past it": '{"id": 18446744073709551615, "n": 18446744073709551616}',
    "a float with 5000 digits": '{"x": 0.' + "1" * 5000 + "}",
    "nesting at the bound": "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH,
    "an escaped pair in upper case": '{"x": "\\uD83D\\uDE00"}',
    "an escaped backslash before `ud800`": '{"x": "\\\\ud800"}',
    "keys that differ in normal form": '{"\u00e9": 1, "e\u0301": 2}',
    "an empty key and `__proto__`": '{"": 1, "__proto__": 2}',
}


@pytest.mark.parametrize("body", CORRECT)
def test_a_correct_answer_at_a_floats_edge_is_read(body):
    """False fault: JSON every client reads (serde, JavaScript, Python) that a stricter
    reading could refuse: the largest float written four ways, `-0`, the smallest subnormal,
    a 309-digit integer that is the largest float's value, 64-bit ids, a 5000-digit fraction,
    nesting at the bound, an escaped surrogate pair in upper case, an escaped backslash
    before `ud800`, keys equal only after normalisation, an empty key. Held: each is read,
    as Python's own parser reads it."""
    text = CORRECT[body]

    assert endpoint_json(text.encode()) == json.loads(text)


def test_the_largest_float_rounded_up_is_out_of_range():
    """The edge's other side: the largest float plus half a step reads as infinity in every
    parser, and is refused."""
    with pytest.raises(ValueError, match="range"):
        endpoint_json(b'{"x": 1.7976931348623159e308}')


# -- the config: model ids and endpoints as providers write them ----------------------------

MODEL_IDS = [
    "llama3:8b",
    "org/model@rev",
    "Qwen/Qwen2.5-7B-Instruct",
    "accounts/fireworks/models/llama-v3p1-70b-instruct",
    "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
    "gpt-4o-2024-08-06",
    "模型-7b",
    "my model",
]


@pytest.mark.parametrize("model", MODEL_IDS)
def test_a_model_id_as_a_provider_writes_it_is_accepted(model):
    """False refusal: model ids with `:`, `/`, `@`, `.`, non-ASCII letters or a space inside
    (Ollama, Hugging Face, Fireworks, Bedrock, a local server). Held: each validates."""
    assert LLMConfig(model=model).model == model


URLS = [
    "HTTPS://api.openai.com/v1",
    "http://[::1]:8000/v1",
    "http://localhost:65535",
    "https://host.example/v1/",
]


@pytest.mark.parametrize("url", URLS)
def test_an_endpoint_url_as_a_client_takes_it_is_accepted(url):
    """False refusal: an upper-case scheme (URL schemes are case-insensitive; httpx, under
    the OpenAI and Anthropic SDKs, reads it), an IPv6 host, the highest port.
    Got through on main (refused): the upper-case scheme. Stops it: the scheme is matched
    without regard to case."""
    assert LLMConfig(model="m", base_url=url).base_url == url


# -- names the store and the content check read: bytes that are not text -------------------


def _raw_name(name: bytes) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        skills = os.fsencode(folder / "skills")
        os.makedirs(skills, exist_ok=True)
        with open(os.path.join(skills, name), "wb") as handle:
            handle.write(b"notes\n")

    return edit


def test_a_file_name_that_is_not_utf8_is_refused(tmp_path: Path, content_check):
    """Attack: a file under `skills/` whose name is not UTF-8 (`\xff\xfe.md`): Python
    reads it with surrogates, git stores its bytes, and the content check, which reads
    every file's name as text, must judge it.
    Got through on main: the store committed it and the content check crashed on it
    (`UnicodeEncodeError` encoding the path), an exception in place of a verdict. Stops it:
    the guard refuses a path that is not UTF-8 text (no harness names a file so)."""
    outcome = _commit(tmp_path, _raw_name(b"\xff\xfe.md"))

    assert outcome.status == "refused", outcome
    assert "skills/\\xff\\xfe.md: a path that is not UTF-8 text" in (outcome.reason or "")
    outcome.reason.encode("utf-8")  # written to the ledger as it is


def test_a_file_name_holding_a_newline_is_refused_and_a_tab_judged(tmp_path, content_check):
    """Attack: names holding a newline, or a tab and a quote (git quotes such paths in its
    listings, and the content check splits a path's names one a line). Held: the newline is
    refused (no component's glob matches it), the tab and quote committed and judged clean."""
    outcome = _commit(tmp_path, _raw_name(b"a\nb.md"))
    assert "not a declared component file" in (outcome.reason or ""), outcome

    assert not content_check.judge(_raw_name(b'a\t"b.md')).contaminated


def test_a_skipped_name_that_is_a_link_out_is_not_committed(tmp_path: Path):
    """Attack: a symlink named like a file the store skips (`*.pyc`) pointing at the host's
    root, and one named `__pycache__` (a folder name the walk does not enter): skipped names
    are not judged, so they must not be committed either. Held: the `.pyc` link is left out
    of the snapshot, the `__pycache__` link (no folder) is judged and refused."""
    outcome = _commit(tmp_path, _links(("runtime/x.pyc", "/")))
    assert outcome.status == "noop", outcome

    outcome = _commit(tmp_path / "again", _links(("runtime/__pycache__", "/")))
    assert "runtime/__pycache__: symlink to an absolute path" in (outcome.reason or "")


NO_CALL_URLS = {
    "port 0": ("http://localhost:0/v1", "port 0"),
    "a user and password": ("https://user:sk-secret123@host.example/v1", "user or password"),
    "a space in the host": ("http://exa mple.com/v1", "whitespace"),
}


@pytest.mark.parametrize("url", NO_CALL_URLS)
def test_an_endpoint_url_no_call_can_use_is_refused(url, tmp_path, monkeypatch, capsys):
    """Attack: endpoint URLs that validate and fail every call of the role (each task an
    infrastructure fault, rerun for nothing): port 0, which no server listens on; a user and
    password in the URL, which the gateway never sends (it connects by scheme, host and
    port), while the password was written in clear into the experiment's `run_meta.json`
    (secrets go in `api_key` as `${ENV_VAR}`); a host with a space, which no resolver finds.
    Got through on main: all three validated. Stops it: `LLMConfig._endpoint` refuses a
    port 0, a user or password, and a host holding whitespace: one line naming the key, the
    password not repeated."""
    monkeypatch.setenv("FLASHRSI_TEST_CANARY_API_KEY", "sk-test-canary")
    (tmp_path / "harness").mkdir()
    (tmp_path / "exp.yaml").write_text(VALID)
    monkeypatch.chdir(tmp_path)
    given, reason = NO_CALL_URLS[url]

    code = main(["validate", "--config", "exp.yaml", "--agent.llm.base_url", given])

    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "agent.llm.base_url" in line]
    assert code == 2 and len(lines) == 1 and reason in lines[0], err
    assert "sk-secret123" not in err
