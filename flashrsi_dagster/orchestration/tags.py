"""The tags a step's run carries, which the run queue's concurrency limits count
(`deployment/run_queue.py`): its experiment, its candidate (round, slot), and every model endpoint
its roles call.

Dagster counts a limit per tag key (and value), and a run holds one value per key. A run of
two endpoints (the Worker's and the target's) must count against both endpoints' limits, and
every run of one endpoint against the same counter, whatever role it calls it for. So each
endpoint a home's experiments use gets a fixed key of its own, `flashrsi/endpoint.<n>`,
numbered in the order the home first saw it (`<home>/.dagster/endpoints.json`), with the
endpoint as its value; the run queue limits each of the `ENDPOINT_KEYS` keys."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.models import LLMConfig
from flashrsi_dagster.experiment.lock import StepLock

ROUND_TAG = "flashrsi/round"
CANDIDATE_TAG = "flashrsi/candidate"
"""A round step's (round, slot): the Runs page filters a candidate's runs by them."""
TITLE_TAG = "flashrsi/about"
"""What the run does, readable in the Runs list where its id is hex: experiment, candidate
(round and slot), action (`meta-harness-demo r001.c0 propose`). The UI lists a run's tags by
key after its partition: `about` comes before the project's other keys."""
ENDPOINT_KEYS = 16
"""How many distinct model endpoints one home can number (and the run queue can limit)."""
ENDPOINTS_FILE = "endpoints.json"
SDK_DEFAULTS = {
    "chat": "https://api.openai.com:443",
    "responses": "https://api.openai.com:443",
    "anthropic": "https://api.anthropic.com:443",
}


def title(experiment: str, action: str, candidate: str | None = None) -> str:
    """A run's `TITLE_TAG`: `<experiment> [<candidate>] <action>`."""
    return " ".join(p for p in (experiment, candidate, action) if p)


def endpoint_key(n: int) -> str:
    return f"flashrsi/endpoint.{n}"


def endpoint_of(llm: LLMConfig) -> str:
    """A role's endpoint as scheme://host:port: no user, password, path or query (nothing
    secret reaches a tag); `offline` for the offline model simulator (every process serves its
    own, all counted as one endpoint)."""
    if llm.base_url == "offline":
        return "offline"
    if llm.base_url is None:
        return SDK_DEFAULTS[llm.api]
    url = urlsplit(llm.base_url)
    host = (url.hostname or "").rstrip(".")  # `api.x.com.` is `api.x.com`: one counter
    host = f"[{host}]" if ":" in host else host
    port = url.port or (443 if url.scheme == "https" else 80)
    return f"{url.scheme}://{host}:{port}"


def endpoint_tags(config: ExperimentConfig, home: Path) -> dict[str, str]:
    """`flashrsi/endpoint.<n>: <endpoint>` for each distinct endpoint of the config's roles."""
    endpoints = sorted({endpoint_of(role.llm) for role in config.roles().values()})
    numbers = EndpointNumbers(Path(home) / ".dagster").of(endpoints)
    return {endpoint_key(numbers[e]): e for e in endpoints}


class EndpointNumbers:
    """The home's numbering of endpoints, kept in `endpoints.json` beside its dagster.yaml;
    a number, once given, is never given to another endpoint."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / ENDPOINTS_FILE
        self._lock = StepLock(Path(folder) / "endpoints.lock")

    def of(self, endpoints: list[str]) -> dict[str, int]:
        known = self._read()
        if set(endpoints) <= set(known):
            return {e: known[e] for e in endpoints}
        with self._lock.held():  # sensor ticks and CLI drivers number them side by side
            known = self._read()
            for endpoint in endpoints:
                if endpoint not in known:
                    if len(known) >= ENDPOINT_KEYS:
                        raise ValueError(
                            f"{self.path}: {len(known)} endpoints numbered already, the most a "
                            f"home can limit; no number left for {endpoint!r}"
                        )
                    known[endpoint] = len(known) + 1
            temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(known, indent=1) + "\n")
            os.replace(temporary, self.path)
        return {e: known[e] for e in endpoints}

    def _read(self) -> dict[str, int]:
        if not self.path.is_file():
            return {}
        try:
            return json.loads(self.path.read_text())
        except json.JSONDecodeError as exc:
            expected = "expected an object of endpoint -> number"
            raise ValueError(f"{self.path}: not JSON ({exc}); {expected}") from None
