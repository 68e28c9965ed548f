"""Gate0: the environment's health, checked before the cold start and before every round.

Three questions, each answered for real and none by a model: does every role's endpoint
answer (a `GET /v1/models` with the role's key, the cheapest call every OpenAI- and
Anthropic-compatible endpoint serves); does the benchmark still load and draw its splits;
does the rest of the set-up hold (data files, harnesses, keys, jails, task environments: the
dry run, `validation.dry_run`). A failure stops the step before anything is written
(`Unhealthy`, a systemic fault): a round run on a broken environment would only record noise,
and would use patience it did not earn. Fix the environment and resume.
"""

from __future__ import annotations

import http.client
import threading
import urllib.error
import urllib.request

from flashrsi_dagster.benchmarks.base import SystemicFault
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.gateway.masking import KeyMask
from flashrsi_dagster.llm.client import resolve_key
from flashrsi_dagster.llm.endpoints import (
    anthropic_base_url,
    openai_base_url,
    opener_within,
    with_path,
)
from flashrsi_dagster.validation import dry_run, key_problem

PING_TIMEOUT = 15.0
PING_GRACE = 5.0
"""Seconds past the ping's deadline for its cut to end it (a loaded machine), after which
Gate0 stops waiting on it."""
DEFAULT_OPENAI = "https://api.openai.com/v1"


class Unhealthy(SystemicFault):
    """Gate0 failed: the message lists every problem, one line each."""


def endpoint_problem(llm: LLMConfig) -> str | None:
    """None when the role's endpoint answers a model listing with its key; else why not. A
    key referenced but unset, or one no header can carry (a line break: `http.client`'s
    refusal quotes it), is the dry run's to report, not a ping's. A role on a native login
    (`llm.auth: login`) pings without a credential: a 401 or 403 is an answer (the login is
    the adapter's to check, and stays where it lives)."""
    try:
        key = resolve_key(llm)
    except Exception:
        return None
    if key_problem(key) is not None:
        return None
    if llm.api == "anthropic":
        url = with_path(anthropic_base_url(llm), "/v1/models", query_of=llm.base_url)
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    else:
        url = with_path(openai_base_url(llm) or DEFAULT_OPENAI, "/models")
        headers = {"Authorization": f"Bearer {key}"}
    login = llm.auth == "login"
    if login:  # not the placeholder key, refused as the role's (Gate0 failed every round)
        headers = {n: v for n, v in headers.items() if n not in ("x-api-key", "Authorization")}
    request = urllib.request.Request(url, headers=headers, method="GET")
    found: list[str | None] = []
    # In a thread of its own: the deadline shuts sockets, and name resolution has none (a
    # resolver that never answers held Gate0, the round with it, without a word). The
    # thread ends with the resolver; its socket, if any, is shut by then.
    ping = threading.Thread(target=lambda: found.append(_ping(request, login)), daemon=True)
    ping.start()
    ping.join(PING_TIMEOUT + PING_GRACE)
    problem = found[0] if found else f"{url} did not answer within {PING_TIMEOUT:g} s"
    # its words quote what the endpoint sent (a status line reflecting the key's header,
    # one of 64 KB)
    return KeyMask(key).quote(problem) if problem is not None else None


def _ping(request: urllib.request.Request, login: bool = False) -> str | None:
    url = request.full_url
    # with the key, to base_url only: not through the environment's proxy, not on to
    # wherever a redirect points (urllib would send the key there); within one deadline
    with opener_within(PING_TIMEOUT) as (opener, shutter):
        try:
            with opener.open(request, timeout=PING_TIMEOUT) as response:
                response.read(1 << 16)
            problem = None
        except urllib.error.HTTPError as exc:
            refused = " (the key is refused)" if exc.code in (401, 403) else ""
            refused = " (a redirect, not followed)" if 300 <= exc.code < 400 else refused
            problem = f"{url} answered HTTP {exc.code}{refused}"
            if login and exc.code in (401, 403):  # asked with no credential: it is up
                problem = None
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as exc:
            problem = f"{url} did not answer: {getattr(exc, 'reason', exc)}"
        except Exception as exc:  # the thread must end with a problem, never a traceback
            # (urllib reads a redirect's `Location` before refusing it: `http://[::1` raises)
            problem = f"{url} answered what the ping cannot read ({type(exc).__name__}: {exc})"
        if shutter.expired:  # whatever the cut raised, or a short body read as whole
            return f"{url} did not answer within {PING_TIMEOUT:g} s"
        return problem


def health_problems(config: ExperimentConfig) -> list[str]:
    """Every problem Gate0 finds, one line each (empty: healthy)."""
    problems = dry_run(config)
    for name, role in config.roles().items():
        problem = endpoint_problem(role.llm)
        if problem is not None:
            problems.append(f"{config.role_key(name)}.llm: {problem}")
    return problems


def gate0(config: ExperimentConfig, when: str) -> None:
    """Raise `Unhealthy` naming every problem; `when`: `the cold start`, `round 3`."""
    problems = health_problems(config)
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise Unhealthy(f"Gate0 before {when}: the environment is not healthy\n{listed}")
