"""How one agent run is confined: a jail around its processes, and the model gateway as the
only way to its model.

Every run gets a per-run gateway token in place of the role's key, so no key is ever in an
agent's environment, files or `/proc`; the gateway injects the real key, meters the run and
enforces the role's spending caps. A jailed run reaches the gateway through a socket the
framework opens inside the jail's network namespace, on `JAIL_GATEWAY_PORT`; an unconfined run
(`experiment.confinement: none`, recorded and shown in every summary) talks to the gateway's
host listener, still without a key.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import shutil
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.models import LLMConfig, RoleConfig, WebConfig
from flashrsi_dagster.environments.attribution import working_for
from flashrsi_dagster.environments.bridge import CLIENT, CommandBridge
from flashrsi_dagster.environments.jail import (
    Jail,
    JailSpec,
    Mount,
    give_to_jail_user,
    require_jails,
)
from flashrsi_dagster.environments.watchdog import Kill, ShellWatchdog
from flashrsi_dagster.gateway import Caps, Gateway, RunUsage, Upstream, WebAccess
from flashrsi_dagster.llm.client import resolve_key
from flashrsi_dagster.llm.endpoints import anthropic_base_url, openai_base_url, with_path
from flashrsi_dagster.records import ErrorInfo, Redactor, Status, Trajectory, Usage

JAIL_GATEWAY_PORT = 8086
"""Where the gateway answers inside every jail (its own network namespace: no clash)."""
JAIL_BRIDGE_PORT = 8087
"""Where a jailed run's commands for its task environment go (see `bridge.py`)."""
SETTLE_GRACE = 5.0
"""Seconds past its upstream's deadline a run's last call in flight is waited for."""
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb"}
"""The allow-list: a jailed process gets these and the run's own variables, nothing else."""


@dataclass
class Opening:
    """The gateway opened to one run (`Confinement.granted`): its token, where the run
    reaches the gateway, and what the run used, filled in when the token is revoked."""

    token: str
    base_url: str
    """The gateway's root URL as the run sees it (append `/v1` for OpenAI clients)."""
    usage: RunUsage | None = field(default=None, kw_only=True)


@dataclass
class AgentRun(Opening):
    """One run's view of its confinement: where its model is and with which token."""

    jail: Jail | None
    env: dict[str, str]
    shell_prefix: list[str] | None = None
    """Where the run's shell commands go when the task has an environment of its own."""
    shell_kills: list[Kill] = field(default_factory=list)
    """Commands the host killed at the run's shell timeout, filled in when the run ends."""

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"


@dataclass(frozen=True)
class RunSpec:
    """What one agent run asks of its confinement (`Confinement.run` says what each means)."""

    role: str
    llm: LLMConfig
    writable: Sequence[Path]
    read_only: Sequence[Mount] = ()
    runtime: JailSpec | None = None
    bridge: Sequence[str] | None = None
    upstream: Upstream | None = None
    max_model_calls: int | None = None
    web: WebConfig | None = None
    deny_tools: Sequence[str] = ()
    shell_timeout: float | None = None
    output_limit: int | None = None


@dataclass
class Confinement:
    """An experiment's (or a caller's) confinement policy and gateway.

    `jailed=False` is the explicit `experiment.confinement: none`; `experiment` attributes the
    gateway's metering; `gateway` defaults to the process's shared one. Agents call `run`;
    where a run is confined is `confine`'s: here, a jail on the host (or no jail) and this
    gateway; inside a task's own environment, `integrations/handed.HandedConfinement`."""

    jailed: bool = True
    experiment: str = ""
    gateway: Gateway | None = None
    caps: dict[str, Caps] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.jailed:
            require_jails()
        if self.gateway is None:
            self.gateway = shared_gateway()
        for role, caps in self.caps.items():
            self.gateway.set_caps(self.experiment, role, caps)

    def unjailed(self) -> Confinement:
        """The same gateway and metering without a jail (for runs confined elsewhere)."""
        return dataclasses.replace(self, jailed=False, caps={})

    def run(
        self,
        role: str,
        llm: LLMConfig,
        *,
        writable: Sequence[Path],
        read_only: Sequence[Mount] = (),
        runtime: JailSpec | None = None,
        bridge: Sequence[str] | None = None,
        upstream: Upstream | None = None,
        max_model_calls: int | None = None,
        web: WebConfig | None = None,
        deny_tools: Sequence[str] = (),
        shell_timeout: float | None = None,
        output_limit: int | None = None,
    ) -> contextlib.AbstractContextManager[AgentRun]:
        """Confine one run: grant a token, start its jail (if jailed) with the run's
        `writable` folders, `read_only` mounts and the agent's `runtime`, and serve the
        gateway inside it. With `bridge` (the argv prefix into a task's own environment), the
        run's `shell_prefix` runs commands there from inside the jail. The gateway answers
        at most `max_model_calls` model calls of the run (None: no count limit; see
        `agents/budgets.py`), serves its web fetches when `web` is enabled, and refuses a
        model call that offers a tool of `deny_tools` (`agents/permissions.py`). `upstream`
        replaces the role's (`upstream_of(llm)`), e.g. for a harness's native login. The
        harness's protected limits are held outside it: a jailed command that runs past
        `shell_timeout` seconds is killed (`watchdog.py`; unconfined runs have only their
        harness's), and the gateway cuts tool results past `output_limit` characters. On exit
        the jail is killed and the token revoked."""
        return self.confine(
            RunSpec(
                role,
                llm,
                writable,
                read_only,
                runtime,
                bridge,
                upstream,
                max_model_calls,
                web,
                deny_tools,
                shell_timeout,
                output_limit,
            )
        )

    @contextlib.contextmanager
    def confine(self, spec: RunSpec) -> Iterator[AgentRun]:
        """`run`'s confinement of one run: a token granted, a jail (unless unjailed) serving
        the gateway inside it, both ended on exit."""
        env = dict(BASE_ENV, HOME="/tmp", TMPDIR="/tmp")
        with self.granted(spec, lambda token, url: AgentRun(token, url, None, env)) as run:
            if not self.jailed:
                run.shell_prefix = list(spec.bridge) if spec.bridge else None
                with lent_copies(spec.read_only):
                    yield run
                return
            with self._jail(spec, run):
                yield run
            _remove_mountpoints(spec.read_only)

    @contextlib.contextmanager
    def granted[O: Opening](
        self, spec: RunSpec, opening: Callable[[str, str], O] = Opening
    ) -> Iterator[O]:
        """A per-run token for `spec`'s role: the gateway holds the run to its upstream,
        model calls, web, withheld tools and output limit, whatever runs with the token
        (jailed here, or inside a task's environment: `integrations/inside.py`). Revoked on
        exit, the run's usage then in `opening.usage`."""
        assert self.gateway is not None
        upstream = spec.upstream or upstream_of(spec.llm)
        token = self.gateway.grant(
            experiment=self.experiment,
            role=spec.role,
            run_id=uuid.uuid4().hex[:12],
            upstream=upstream,
            max_calls=spec.max_model_calls,
            web=web_access(spec.web),
            deny_tools=frozenset(spec.deny_tools),
            output_limit=spec.output_limit,
            candidate=working_for(),
        )
        run = opening(token, self.gateway.url)
        try:
            yield run
        finally:
            run.usage = self.gateway.revoke(token)
            if run.usage.in_flight:
                # A call the run left in flight: abandoned by the harness (a fault it could
                # stage at will to buy a rerun) unless the endpoint then fails or times out.
                run.usage = self.gateway.settle(token, upstream.timeout + SETTLE_GRACE)

    @contextlib.contextmanager
    def _jail(self, spec: RunSpec, run: AgentRun) -> Iterator[Jail]:
        """The run's jail, the gateway answering `token` inside it (and the task
        environment's commands, with a `bridge`), its shell watched (`shell_timeout`)."""
        assert self.gateway is not None
        give_to_jail_user(spec.writable)
        mounts = (*(Mount(Path(p), writable=True) for p in spec.writable), *spec.read_only)
        if spec.bridge:
            mounts = (*mounts, Mount(CLIENT))
        with Jail((spec.runtime or JailSpec()).with_mounts(*mounts)) as jail:
            listener = jail.listen(JAIL_GATEWAY_PORT)
            self.gateway.serve(listener, token=run.token)
            run.jail, run.base_url = jail, f"http://127.0.0.1:{JAIL_GATEWAY_PORT}"
            commands = _bridge(jail, spec.bridge, run) if spec.bridge else None
            watchdog = ShellWatchdog(jail, spec.shell_timeout) if spec.shell_timeout else None
            try:
                yield jail
            finally:
                if watchdog is not None:
                    run.shell_kills = watchdog.close()
                self.gateway.unserve(listener)
                if commands is not None:
                    commands.close()


def _bridge(jail: Jail, prefix: Sequence[str], run: AgentRun) -> CommandBridge:
    """Serve the task environment's commands inside the jail; the run's shell reaches them
    with the bridge client, run by the jail's own interpreter."""
    bridge = CommandBridge(jail.listen(JAIL_BRIDGE_PORT), prefix)
    python = os.path.realpath(sys.executable)
    run.shell_prefix = [python, "-I", "-S", str(CLIENT)]
    run.env["FLASHRSI_BRIDGE_PORT"] = str(JAIL_BRIDGE_PORT)
    return bridge


@contextlib.contextmanager
def lent_copies(mounts: Sequence[Mount]) -> Iterator[None]:
    """Unconfined stand-in for read-only mounts placed elsewhere: a copy of each at its
    target, so an unconfined agent sees the same files a jailed one does (a symlink would not
    be the same: `find`, `os.walk`, `rglob` and `cp -r` do not follow one, so a Worker saw
    an empty `.history`). Removed after the run with whatever the agent wrote in it; the
    source is never lent, so nothing the agent does there reaches it."""
    made = []
    try:
        for mount in mounts:
            if mount.target is not None and mount.target != mount.source:
                remove_lent(mount.target)  # as a mount would hide it
                made.append(mount.target)
                if mount.source.is_dir():
                    shutil.copytree(mount.source, mount.target, symlinks=True)
                else:
                    shutil.copy2(mount.source, mount.target)
        yield
    finally:
        for target in made:
            remove_lent(target)


def remove_lent(path: Path) -> None:
    """Whatever is at a lent folder's place now: a mount point, a link, a copy, or what the
    agent put there instead (a folder it made read-only included)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onexc=_writable_then_retry)


def _writable_then_retry(function, path, _exc) -> None:
    parent = Path(path).parent
    parent.chmod(parent.stat().st_mode | 0o700)
    function(path)


def _remove_mountpoints(mounts: Sequence[Mount]) -> None:
    """bubblewrap leaves an empty folder where a mount inside a writable folder was."""
    for mount in mounts:
        if mount.target is not None and mount.target != mount.source:
            with contextlib.suppress(OSError):
                mount.target.rmdir()


def gateway_verdict(trajectory: Trajectory, usage: RunUsage | None, timed_out: bool) -> Trajectory:
    """The run's trajectory as the gateway saw it. Tokens, cost and model calls
    (`Usage.model_calls`, beside the harness's own `turns`) are the gateway's count (a harness
    can misreport its own). An infrastructure fault — rerun by the ladder — is what the
    framework saw, never what the harness claims: a call refused by a spending cap, a run cut
    at its timeout while waiting on the model, a run that did not succeed after a fault of the
    endpoint or the gateway ended its last model call (`RunUsage.last_fault`, with its cause),
    or a fault the harness reports *and* the gateway saw. A harness that calls its own
    answered run an endpoint failure buys no rerun."""
    if usage is None:
        return trajectory
    counted = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "model_calls": usage.calls,
    }
    update: dict = {
        "usage": (trajectory.usage or Usage()).model_copy(
            update={**counted, "cost": usage.cost_usd}
        )
    }
    fault = _fault(trajectory, usage, timed_out)
    if fault is not None:
        update |= {"status": fault[0], "error": ErrorInfo(type=fault[1], message=fault[2])}
    return trajectory.model_copy(update=update)


KEY_REFUSED = "EndpointRefusedKey"
"""The error type of a run whose model calls the endpoint refused for the role's key."""
ENDPOINT_FAULT = "EndpointFault"
"""The error type of a run that did not succeed after the endpoint (or the gateway) failed
its last model call."""


def _fault(trajectory: Trajectory, usage: RunUsage, timed_out: bool):
    if usage.key_refused and trajectory.status != Status.SUCCESS:
        return (
            Status.INFRA_ERROR,
            KEY_REFUSED,
            f"the model endpoint refused the role's key on {usage.key_refused} call(s) "
            "(HTTP 401/403)",
        )
    if usage.capped:
        return Status.INFRA_ERROR, "GatewayRefused", "; ".join(dict.fromkeys(usage.capped))
    if timed_out and (usage.in_flight or usage.timed_out):
        return (
            Status.INFRA_ERROR,
            "EndpointHung",
            (
                f"the run was cut short at its timeout while waiting on the model "
                f"({usage.in_flight} call(s) in flight, {usage.timed_out} timed out): "
                "an endpoint fault, not the agent's answer"
            ),
        )
    if trajectory.status != Status.SUCCESS and usage.in_flight:
        # Its client gave up on the endpoint first (its timeout is the gateway's deadline too).
        return (
            Status.INFRA_ERROR,
            "EndpointHung",
            f"the run ended without an answer while {usage.in_flight} model call(s) were still "
            "waiting on the endpoint: an endpoint fault, not the agent's answer",
        )
    if trajectory.status != Status.SUCCESS and usage.last_fault is not None:
        reported = f" (the run reported {_said(trajectory)})" if trajectory.error else ""
        return (
            Status.INFRA_ERROR,
            ENDPOINT_FAULT,
            f"{usage.last_fault}; {usage.failed} call(s) failed on the infrastructure's "
            f"side{reported}",
        )
    if trajectory.status == Status.INFRA_ERROR and not usage.failed:
        claimed = trajectory.error.message if trajectory.error else "no message"
        return (
            Status.ERROR,
            "UnbackedInfraClaim",
            (
                "the run reported an infrastructure fault that the gateway never saw (every model "
                f"call it made was answered): {claimed}"
            ),
        )
    return None


def _said(trajectory: Trajectory) -> str:
    error = trajectory.error
    return f"{error.type}: {error.message}" if error else ""


def web_access(web: WebConfig | None) -> WebAccess | None:
    """The gateway's web grant for a role's `web` (None when it is off)."""
    if web is None or not web.enabled:
        return None
    return WebAccess(
        source=web.source, max_bytes=web.max_bytes, timeout=web.timeout, search_url=web.search_url
    )


def caps_of(roles: dict[str, RoleConfig]) -> dict[str, Caps]:
    return {
        role: Caps(max_usd=config.spend_cap.usd, max_tokens=config.spend_cap.tokens)
        for role, config in roles.items()
        if config.spend_cap is not None
    }


def upstream_of(llm: LLMConfig) -> Upstream:
    """The real endpoint behind the gateway for a role: its URL prefix for `/v1` and key."""
    if llm.api == "anthropic":
        base = with_path(anthropic_base_url(llm), "/v1", query_of=llm.base_url)
    else:
        base = (openai_base_url(llm) or "https://api.openai.com/v1").rstrip("/")
    # Only the role's model: a harness that switches models would be evaluated on another
    # model than the one the experiment names (and bill it to the role).
    return Upstream(
        base_url=base,
        api=llm.api,
        key=resolve_key(llm),
        price=llm.price,
        timeout=llm.timeout,
        models=frozenset({llm.model}),
        # The per-call settings the harness applies, held by the gateway too (`ceilings.py`).
        max_output=llm.max_tokens,
        effort=llm.reasoning.effort if llm.reasoning else None,
        thinking=llm.reasoning.budget_tokens if llm.reasoning else None,
        choices=_choices(llm.extra_body.get("n")),
    )


def _choices(n: object) -> int:
    """The answers per chat call the role's `extra_body` asks for (one if it names none)."""
    return n if type(n) is int and n > 1 else 1


def confinement_for(config: ExperimentConfig, log: Path, redactor: Redactor) -> Confinement:
    """An experiment's confinement: its `confinement` setting, its roles' spending caps, and
    a gateway of its own whose redacted request log is `log`."""
    roles = config.roles()
    return Confinement(
        jailed=config.experiment.confinement == "bwrap",
        experiment=config.experiment.name,
        gateway=shared_gateway(log, redactor),
        caps=caps_of(roles),
    )


_lock = threading.Lock()
_gateways: dict[Path | None, Gateway] = {}


def shared_gateway(log: Path | None = None, redactor: Redactor | None = None) -> Gateway:
    """The process's gateway writing to `log` (one per experiment; `None`: the gateway of
    agents built outside an experiment), started on first use and closed at exit."""
    with _lock:
        gateway = _gateways.get(log)
        if gateway is None:
            if log is not None:
                log.parent.mkdir(parents=True, exist_ok=True)
            gateway = _gateways[log] = Gateway(log_path=log, redactor=redactor).start()
            atexit.register(gateway.close)
        return gateway
