"""`Accounts`: the live tokens, what each run used, the caps per (experiment, role), all under one
lock. Runs stay after revoke, so late-ending calls still count and totals stay complete.

With a call log, a role's caps count the calls of every gateway writing it (other processes,
other hosts sharing the experiment home; see `shared.py`), their calls in flight included."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

from flashrsi_dagster.gateway.errors import GatewayError
from flashrsi_dagster.gateway.grants import Caps, Grant
from flashrsi_dagster.gateway.log import CallLog
from flashrsi_dagster.gateway.metering import RunUsage, Tokens, Usage
from flashrsi_dagster.gateway.shared import SharedSpend

# A hostile run can be refused in a loop: its `refused` list keeps the first messages only.
MAX_REFUSED = 100


@dataclass(eq=False)
class Run:
    """One grant and what it used."""

    grant: Grant
    usage: Usage = field(default_factory=Usage)
    refused: list[str] = field(default_factory=list)
    capped: list[str] = field(default_factory=list)
    in_flight: int = 0
    timed_out: int = 0
    failed: int = 0
    key_refused: int = 0
    answered: int = 0
    """Model calls answered with HTTP 2xx (what `Grant.max_calls` counts)."""
    over_budget: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    web_requests: int = 0
    clipped: int = 0
    faults: list[str] = field(default_factory=list)
    last_fault: str | None = None
    revoked: bool = False

    def report(self) -> RunUsage:
        u = self.usage
        return RunUsage(
            u.input_tokens, u.output_tokens, u.cost_usd, u.calls,
            list(self.refused), self.in_flight, self.timed_out,
            list(self.capped), self.failed, self.key_refused,
            list(self.over_budget), self.answered, self.web_requests, list(self.denied),
            self.clipped,
            list(self.faults), self.last_fault,
        )  # fmt: skip


class Accounts:
    def __init__(self, log: CallLog | None = None) -> None:
        """`log`: the call log the gateway writes, shared with other gateways (or None)."""
        self._log = log
        self._lock = threading.Lock()
        self._ended = threading.Condition(self._lock)  # notified as each call ends
        self._runs: dict[str, Run] = {}  # token digest -> run, revoked ones included
        self._roles: dict[tuple[str, str], Usage] = {}
        self._caps: dict[tuple[str, str], Caps] = {}
        self._reserved: dict[tuple[str, str], int] = {}  # tokens of calls in flight, per role

    def add(self, token_digest: str, grant: Grant) -> None:
        key = (grant.experiment, grant.role)
        with self._lock:
            _check_priced(self._caps.get(key), [grant], key)
            self._runs[token_digest] = Run(grant)
            self._roles.setdefault(key, Usage())

    def set_caps(self, experiment: str, role: str, caps: Caps) -> None:
        key = (experiment, role)
        with self._lock:
            grants = [r.grant for r in self._runs.values() if not r.revoked]
            _check_priced(caps, [g for g in grants if (g.experiment, g.role) == key], key)
            self._caps[key] = caps

    def find(self, token_digest: str) -> Run | None:
        """The run of a token, revoked or not (the caller refuses revoked ones)."""
        return self._runs.get(token_digest)

    def revoke(self, token_digest: str) -> RunUsage:
        with self._lock:
            run = self._runs.get(token_digest)
            if run is None:
                raise GatewayError("revoke: unknown token")
            run.revoked = True
            return run.report()

    def settle(self, token_digest: str, within: float) -> RunUsage:
        """The run's usage once its calls in flight have ended (each ends by its upstream's
        deadline), waiting at most `within` seconds for them."""
        with self._lock:
            run = self._runs.get(token_digest)
            if run is None:
                raise GatewayError("settle: unknown token")
            self._ended.wait_for(lambda: run.in_flight <= 0, timeout=within)
            return run.report()

    def _over_cap(self, g: Grant, reserve: int, shared: SharedSpend | None) -> str | None:
        """A call alone may cross the cap (it is let finish); one that would start while
        others are in flight (here or in another gateway) may not, if together they could."""
        key = (g.experiment, g.role)
        caps = self._caps.get(key)
        if caps is None:
            return None
        used = Usage()
        used.merge(self._roles[key])
        spent, held = shared.others(key) if shared is not None else (None, 0)
        if spent is not None:
            used.merge(spent)
        others = self._reserved.get(key, 0) + held
        head = f"gateway: role {g.role!r} of experiment {g.experiment!r} reached its cap of"
        parallel = f", with calls in flight that may use {others + reserve} tokens"
        if caps.max_tokens is not None:
            if used.tokens >= caps.max_tokens:
                return f"{head} {caps.max_tokens} tokens (used {used.tokens})"
            if others and used.tokens + others + reserve > caps.max_tokens:
                return f"{head} {caps.max_tokens} tokens (used {used.tokens}{parallel})"
        if caps.max_usd is None:
            return None
        spent_usd = used.cost_usd
        if spent_usd is None:  # unpriced calls made before the cap was set, or elsewhere
            return f"{head} ${caps.max_usd:g}: its cost is unknown (unpriced calls)"
        if spent_usd >= caps.max_usd:
            return f"{head} ${caps.max_usd:g} (used ${spent_usd:.6g})"
        price = g.upstream.price
        worst = (others + reserve) * max(price.input_per_mtok, price.output_per_mtok) / 1e6
        if others and spent_usd + worst > caps.max_usd:
            return f"{head} ${caps.max_usd:g} (used ${spent_usd:.6g}{parallel})"
        return None

    def over_calls(self, run: Run) -> str | None:
        """Why the run may not start another model call (its `max_calls` are answered or in
        flight), or None."""
        with self._lock:
            return self._over_calls(run)

    def _over_calls(self, run: Run) -> str | None:
        limit = run.grant.max_calls
        if limit is None or run.answered + run.in_flight < limit:
            return None
        return (
            f"gateway: run {run.grant.run_id!r} used its {limit} model call(s) (what the "
            "role's max_turns / max_tool_calls allow, the forced final answer included); no "
            "further model call is allowed"
        )

    def admit(self, run: Run, reserve: int, *, counted: bool = False) -> tuple[str, bool] | None:
        """Start a call that may use up to `reserve` tokens, unless the role's cap or, for a
        `counted` model call, the run's `max_calls` forbids it: (the reason, whether it is
        the run's budget). Atomic, across the processes sharing the log too, so two calls
        cannot both take the last of a cap."""
        g = run.grant
        key = (g.experiment, g.role)
        with self._lock:
            over = self._over_calls(run) if counted else None
            if over is not None:
                return over, True
            # Only a capped role's calls wait for the log: an uncapped one has nothing to count.
            shared_caps = self._log is not None and key in self._caps
            with self._log.locked() if shared_caps else contextlib.nullcontext() as shared:
                reason = self._over_cap(g, reserve, shared)
                if reason is None:
                    run.in_flight += 1
                    self._reserved[key] = self._reserved.get(key, 0) + reserve
                    if shared is not None:
                        shared.hold(key, reserve)  # released as the call's line is logged
            return None if reason is None else (reason, False)

    def refuse(
        self, run: Run, message: str, *, capped: bool = False, over_budget: bool = False,
        denied: bool = False,
    ) -> None:  # fmt: skip
        with self._lock:
            if denied and len(run.denied) < MAX_REFUSED:
                run.denied.append(message)
            if len(run.refused) < MAX_REFUSED:
                run.refused.append(message)
            if capped and len(run.capped) < MAX_REFUSED:
                run.capped.append(message)
            if over_budget and len(run.over_budget) < MAX_REFUSED:
                run.over_budget.append(message)

    def clip(self, run: Run, results: int) -> None:
        with self._lock:
            run.clipped += results

    def web_request(self, run: Run) -> None:
        with self._lock:
            run.web_requests += 1

    def fail(self, run: Run, cause: str) -> None:
        """A call of the run failed on the endpoint's side or the gateway's, for `cause` (see
        `RunUsage.failed`)."""
        with self._lock:
            run.failed += 1
            run.last_fault = cause
            if len(run.faults) < MAX_REFUSED:
                run.faults.append(cause)

    def refuse_key(self, run: Run) -> None:
        """The endpoint refused the role's key (HTTP 401/403; see `RunUsage.key_refused`)."""
        with self._lock:
            run.key_refused += 1

    def end(
        self, run: Run, tokens: Tokens | None, *, timed_out: bool = False, reserved: int = 0,
        answered: bool = False,
    ) -> None:  # fmt: skip
        """An upstream call ended; `tokens` None: not a model call (it is not counted);
        `answered`: a model call answered with HTTP 2xx."""
        cost = None if tokens is None else tokens.cost(run.grant.upstream.price)
        g = run.grant
        with self._lock:
            run.in_flight -= 1
            self._ended.notify_all()
            self._reserved[g.experiment, g.role] = (
                self._reserved.get((g.experiment, g.role), 0) - reserved
            )
            run.timed_out += timed_out
            if answered and tokens is not None:
                run.answered += 1
                run.last_fault = None  # the run got past the fault
            if tokens is not None:
                run.usage.add(tokens, cost)
                self._roles[g.experiment, g.role].add(tokens, cost)

    def totals(self, experiment: str | None, role: str | None, run_id: str | None) -> Usage:
        total = Usage()
        with self._lock:
            for run in self._runs.values():
                g = run.grant
                if (
                    (experiment is None or g.experiment == experiment)
                    and (role is None or g.role == role)
                    and (run_id is None or g.run_id == run_id)
                ):
                    total.merge(run.usage)
        return total


def _check_priced(caps: Caps | None, grants: list[Grant], key: tuple[str, str]) -> None:
    """A USD cap over an unpriced upstream could never be reached: refuse it up front."""
    if caps is None or caps.max_usd is None:
        return
    for grant in grants:
        if grant.upstream.price is None:
            raise GatewayError(
                f"role {key[1]!r} of experiment {key[0]!r} has a USD cap, but the upstream "
                f"{grant.upstream.base_url} of run {grant.run_id!r} has no price"
            )
