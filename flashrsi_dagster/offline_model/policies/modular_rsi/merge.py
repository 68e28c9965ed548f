"""The integration phase and its repairs: every branch's changes merged into the seed, by text.

The Worker's folder is the seed's checkout; `Branch references: <refs>` names the folder that
holds each chosen branch's whole version, `<refs>/<module>/`.

Integration:
1. `shell`: `ls -1 <refs>` (the branches) and `cat <file>` of every module file, in one reply.
2. `shell`: `diff -u <file> <refs>/<branch>/<file>` for every branch and file, in one reply.
3. Per file, every branch's changes are merged into the seed's text (`merge`): each hunk is
   split into its runs of removed/added lines, each run replacing a range of the seed's
   lines. Runs of different branches on disjoint ranges all apply (two branches that changed
   different functions of a shared file both keep their change); the same run made by two
   branches applies once; two insertions at one point apply both, in branch order; other
   overlapping runs conflict, and the first branch's run (branches in `ls` order) is kept.
   Every changed file is written with one `editor create`, all in one reply. A file whose
   text or diff came back truncated (MiniAgent bounds tool output) is not rewritten.
4. A summary: which branches changed which file, and any conflict.

Repair (the problems are listed in the instruction):
1. `shell`: `ls -1 <refs>` and `cat` of every Python module file, in one reply.
2. A module file that does not compile (parsed by the simulator, never run) is replaced by the
   first branch's version of it that compiles (`cp`), which keeps that module's change and
   loses the others' in that file, and the summary says so. When every file compiles, there
   is nothing the merge broke: the reply says so and changes nothing.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.policies.markers import safe_path
from flashrsi_dagster.offline_model.policies.modular_rsi.instruction import Instruction, shell_text
from flashrsi_dagster.offline_model.policies.worker import (
    cat_command,
    editor_call,
    results_by_request,
    shell_call,
)

TRUNCATED = re.compile(r"\[\.\.\. \d+ characters truncated \.\.\.\]")
_HUNK = re.compile(r"^@@ -(?P<start>\d+)(?:,(?P<length>\d+))? \+\d+(?:,\d+)? @@")


@dataclass(frozen=True)
class Run:
    """Seed lines [start, end) replaced by `lines` (start == end: an insertion)."""

    start: int
    end: int
    lines: tuple[str, ...]
    branch: str


@dataclass
class Merged:
    text: str
    branches: list[str] = field(default_factory=list)
    """The branches whose changes the text holds."""
    conflicts: list[str] = field(default_factory=list)


def list_command(references: str) -> str:
    return f"ls -1 {shlex.quote(references)}"


def diff_command(path: str, references: str, branch: str) -> str:
    return f"diff -u {shlex.quote(path)} {shlex.quote(f'{references}/{branch}/{path}')}"


def branches_in(listing: str) -> list[str]:
    names = (line.strip().rstrip("/") for line in listing.splitlines())
    return [name for name in names if name and safe_path(name) and "/" not in name]


def runs_of(diff: str, branch: str) -> list[Run]:
    """The runs of removed/added lines in `diff -u` output, against the first file's lines."""
    runs: list[Run] = []
    seed = None  # 0-based index in the seed of the next hunk line
    start, removed, added = None, 0, []

    def close() -> None:
        nonlocal start, removed, added
        if start is not None:
            runs.append(Run(start, start + removed, tuple(added), branch))
        start, removed, added = None, 0, []

    for line in diff.splitlines():
        if hunk := _HUNK.match(line):
            close()
            length = hunk["length"]
            seed = int(hunk["start"]) - (0 if length == "0" else 1)
        elif seed is None or line.startswith("\\"):
            continue
        elif line.startswith(("-", "+")):
            if start is None:
                start = seed
            if line.startswith("-"):
                removed += 1
                seed += 1
            else:
                added.append(line[1:])
        else:  # context
            close()
            seed += 1
    close()
    return runs


def merge(seed: str, diffs: dict[str, str]) -> Merged:
    """The seed's text with every branch's runs (`diffs`: branch -> `diff -u` output)."""
    lines = seed.splitlines()
    kept: list[Run] = []
    merged = Merged(seed)
    for branch, diff in diffs.items():
        for run in runs_of(diff, branch):
            clash = next((k for k in kept if _overlap(k, run)), None)
            if clash is None or (run.start == run.end == clash.start == clash.end):
                kept.append(run)
            elif (clash.start, clash.end, clash.lines) != (run.start, run.end, run.lines):
                merged.conflicts.append(
                    f"{branch} and {clash.branch} both changed seed lines "
                    f"{run.start + 1}-{max(run.end, run.start + 1)}; {clash.branch}'s change kept"
                )
    merged.text = _apply(lines, kept) + ("\n" if seed.endswith("\n") else "")
    merged.branches = list(dict.fromkeys(run.branch for run in kept))
    return merged


def _apply(lines: list[str], runs: list[Run]) -> str:
    """The lines with the runs applied in seed order (a stable sort: insertions at one point
    keep branch order, and go before a replacement starting there)."""
    out, at = [], 0
    for run in sorted(runs, key=lambda r: (r.start, r.end != r.start)):
        out += lines[at : run.start]
        out += run.lines
        at = max(at, run.end, run.start)
    out += lines[at:]
    return "\n".join(out)


def _overlap(a: Run, b: Run) -> bool:
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def integrate(conversation: Conversation, instruction: Instruction) -> Reply:
    refs = instruction.references
    if not refs or not safe_path(refs):
        return Reply(
            text="Simulator worker, integration: no usable `Branch references:` "
            "folder in the instruction; nothing was merged."
        )
    done = results_by_request(conversation)
    first = [list_command(refs), *(cat_command(path) for path in instruction.files)]
    if missing := [c for c in first if ("shell", c) not in done]:
        return Reply(tool_calls=tuple(map(shell_call, missing)))
    branches = branches_in(shell_text(done[("shell", list_command(refs))])[1])
    diffs = [diff_command(p, refs, b) for b in branches for p in instruction.files]
    if missing := [c for c in diffs if ("shell", c) not in done]:
        return Reply(tool_calls=tuple(map(shell_call, missing)))
    results, notes = {}, []
    for path in instruction.files:
        code, seed = shell_text(done[("shell", cat_command(path))])
        outputs = {b: shell_text(done[("shell", diff_command(path, refs, b))])[1] for b in branches}
        if code not in (None, 0) or any(TRUNCATED.search(t) for t in (seed, *outputs.values())):
            notes.append(f"- {path}: not merged, its text or a diff could not be read whole")
            continue
        merged = merge(seed, outputs)
        if merged.text != seed:
            results[path] = merged
        said = ", ".join(merged.branches) or "no branch"
        conflicts = "".join(f"; conflict: {c}" for c in merged.conflicts)
        notes.append(f"- {path}: changes of {said}{conflicts}")
    writes = [editor_call(command="create", path=p, file_text=m.text) for p, m in results.items()]
    if writes and not any(("editor", "create", p) in done for p in results):
        return Reply(tool_calls=tuple(writes))
    head = f"Simulator worker, integration of {', '.join(branches) or 'no branch'}: "
    head += f"merged {len(results)} file(s) into the seed." if results else "nothing to merge."
    return Reply(text=head + "\n" + "\n".join(notes))


def repair(conversation: Conversation, instruction: Instruction) -> Reply:
    refs = instruction.references or ""
    done = results_by_request(conversation)
    python = [p for p in instruction.files if p.endswith(".py")]
    first = ([list_command(refs)] if safe_path(refs) else []) + [cat_command(p) for p in python]
    if missing := [c for c in first if ("shell", c) not in done]:
        return Reply(tool_calls=tuple(map(shell_call, missing)))
    broken = [p for p in python if not _compiles(shell_text(done[("shell", cat_command(p))])[1], p)]
    if not broken:
        return Reply(
            text=(
                "Simulator worker, repair: every module file compiles and the branches' changes "
                "are in place; nothing the merge broke is left to repair, so nothing was changed."
            )
        )
    branches = branches_in(shell_text(done.get(("shell", list_command(refs)), ""))[1])
    copies, notes = [], []
    for path in broken:
        reads = [cat_command(f"{refs}/{b}/{path}") for b in branches]
        if unread := [c for c in reads if ("shell", c) not in done]:
            return Reply(tool_calls=tuple(map(shell_call, unread)))
        good = next(
            (
                b
                for b, c in zip(branches, reads, strict=True)
                if _compiles(shell_text(done[("shell", c)])[1], path)
            ),
            None,
        )
        if good is None:
            notes.append(f"- {path} does not compile, and no branch's version of it does")
            continue
        copies.append(f"cp {shlex.quote(f'{refs}/{good}/{path}')} {shlex.quote(path)}")
        notes.append(
            f"- {path} did not compile: replaced by {good}'s version, which keeps "
            f"{good}'s change and loses the other branches' in this file"
        )
    if copies and not all(("shell", c) in done for c in copies):
        return Reply(tool_calls=tuple(map(shell_call, copies)))
    return Reply(text="Simulator worker, repair:\n" + "\n".join(notes))


def _compiles(text: str, path: str) -> bool:
    if TRUNCATED.search(text):
        return True  # cannot be judged from a cut text; left as it is
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True
