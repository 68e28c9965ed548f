"""MiniAgent's process entry. It imports nothing from the framework.

Two ways in, one run per process either way:
- `python _entry.py` reads one JSON object on stdin (for containers and manual use);
- `python _entry.py --fork-server` imports the OpenAI SDK once, then forks one child per JSON
  line on stdin and reports `started <id> <pid>` / `exited <pid> <code>` lines on stdout
  (`launcher.py` drives it): the import costs over a second of CPU on a small machine, so
  paying it once per agent instead of once per rollout matters.
Either way the loop runs from the snapshot folder the payload names and the result (redacted)
is written to the payload's `output` path after every turn.

A payload with a `jail` runs confined: the forked child joins the jail's namespaces (a
bubblewrap sandbox the framework started for this run, see `environments/jail.py`), forks the
run into the jail's PID namespace, and the run drops to the jail user with exactly the
payload's environment before the harness is imported. The server itself runs with `-I -S`
and only the harness's site-packages on its path, so the run's process never had the
framework's environment or packages. On SIGTERM the run is cancelled:
the running tool kills its process group and the partial result is written; the caller kills
the process group 2 s later regardless.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import sys
import tempfile
import threading
import traceback
from pathlib import Path

_joining = None


def main() -> int:
    cancel = _on_sigterm()
    try:
        payload = json.loads(sys.stdin.read())
    except KeyboardInterrupt:
        return 128 + signal.SIGTERM
    return run_payload(payload, cancel)


def fork_server(site_packages: str | None = None, joining: str | None = None) -> int:
    if site_packages:
        sys.path.append(site_packages)
    if joining:  # the framework's stdlib-only jail entry, loaded by path before any fork
        global _joining
        spec = importlib.util.spec_from_file_location("flashrsi_joining", joining)
        _joining = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_joining)
        _joining.seccomp().library()  # loaded once, before any fork enters a jail
    import openai
    import yaml  # noqa: F401  - the harness reads agent.yaml

    # A first client pulls in the HTTP transport's modules lazily (~0.25 s): do it once here.
    openai.OpenAI(api_key="warm-up", base_url="http://127.0.0.1:9").close()

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() when a child exits
    stdin, pending = sys.stdin.fileno(), b""
    while True:
        ready, _, _ = select.select([stdin, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        _reap()
        if stdin not in ready:
            continue
        # Raw reads: a buffered reader could hold several requests that select() no longer sees.
        data = os.read(stdin, 1 << 16)
        if not data:
            return 0
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            _fork(json.loads(line), wake_r, wake_w)


def _fork(request: dict, *pipes: int) -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(_child(request["payload"], *pipes))
    _say(f"started {request['id']} {pid}")


def _child(payload: dict, *pipes: int) -> int:
    """A forked run: own process group, own stderr file, the server's plumbing closed."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in pipes:
        os.close(fd)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(os.open(payload.pop("stderr"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 2)
    try:
        if payload.get("jail"):
            _join_jail(payload.pop("jail"))
        return run_payload(payload, _on_sigterm())
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stderr.flush()


def _join_jail(jail: dict) -> None:
    """Returns in the run's process, inside the jail; this process stays outside, waits for
    it and exits with its code (the framework signals the whole process group)."""
    if _joining is None:
        raise RuntimeError("this fork server was started without jail support")
    groups = [os.open(path, os.O_WRONLY) for path in jail.get("cgroups") or ()]
    seccomp_filter = _joining.seccomp().prepare()  # libseccomp is read on the host's side
    _joining.enter(jail["pid"])
    pid = os.fork()
    if pid:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the run got it too, and saves first
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    _joining.drop_privileges(jail["env"], seccomp_filter, groups)


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _say(f"exited {pid} {os.waitstatus_to_exitcode(status)}")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run_payload(payload: dict, cancel: threading.Event) -> int:
    output = Path(payload.pop("output"))
    # Our own folder is not the harness's business: the harness imports from its snapshot.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent]
    sys.path.insert(0, payload["files_dir"])
    os.chdir(payload["working_dir"])

    observed = _observe(payload["files_dir"])  # before the harness's first line runs
    from runtime.agent import run
    from runtime.trace import Redactor

    redactor = Redactor([payload["llm"].get("api_key") or "", *payload.pop("secrets", [])])

    def save(result: dict) -> None:
        _save(output, {**result, "activation": observed()}, redactor)

    result = None
    try:
        result = run({**payload, "cancel": cancel}, on_step=save)
    finally:
        if result is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the last write finish
            save(result)
    return 0


def _observe(files_dir: str):
    """What of the harness's own files this run used, seen from here (this file is the
    framework's, outside the snapshot the Worker edits): each file opened (an audit hook,
    which no later code can remove) and each line of its Python that ran (`sys.monitoring`
    line events, each location reported once). The harness runs in this process, so it could
    switch the line events off: then fewer lines are seen and the activation gate fails
    closed. Returns a function giving `{"opened": [...], "lines": {path: [...]}}` so far;
    `lines` is None where `sys.monitoring` is missing (before Python 3.12)."""
    root = os.path.realpath(files_dir) + os.sep
    opened: set[str] = set()
    lines: dict[str, set[int]] = {}
    codes: dict[object, str] = {}

    def relative(path) -> str | None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return None
        full = os.path.realpath(path)
        return full[len(root) :] if full.startswith(root) else None

    def on_audit(event: str, args: tuple) -> None:
        if event == "open" and args and (rel := relative(args[0])) is not None:
            opened.add(rel)

    sys.addaudithook(on_audit)
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tool, events = monitoring.COVERAGE_ID, monitoring.events

        # Each code object's first start comes here once: another's is switched off for
        # good, a harness file's gets line events (global line events cost seconds a run).
        def on_start(code, offset: int):
            if (rel := relative(code.co_filename)) is not None:
                codes[code] = rel
                monitoring.set_local_events(tool, code, events.LINE)
            return monitoring.DISABLE

        def on_line(code, line: int):
            if (rel := codes.get(code)) is not None:
                lines.setdefault(rel, set()).add(line)
            return monitoring.DISABLE

        monitoring.use_tool_id(tool, "flashrsi-activation")
        monitoring.register_callback(tool, events.PY_START, on_start)
        monitoring.register_callback(tool, events.LINE, on_line)
        monitoring.set_events(tool, events.PY_START)

    def observed() -> dict:
        seen = None if monitoring is None else {p: sorted(n) for p, n in sorted(lines.items())}
        return {"opened": sorted(opened), "lines": seen}

    return observed


def _on_sigterm() -> threading.Event:
    """Installed first thing: a cancel that arrives while starting must not kill us silently."""
    cancel = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: _cancel(cancel))
    return cancel


def _cancel(event: threading.Event) -> None:
    if event.is_set():
        return
    event.set()
    # Interrupts a blocking model call or tool wait in the main thread.
    raise KeyboardInterrupt


def _save(path: Path, result: dict, redactor) -> None:
    data = json.dumps(redactor.value(result), ensure_ascii=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(data)
    os.replace(tmp, path)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--fork-server"]:
        sys.exit(fork_server(*sys.argv[2:4]))
    sys.exit(main())
