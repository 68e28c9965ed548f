"""The offline model simulator: a real HTTP server on 127.0.0.1 that real clients talk to.

It speaks OpenAI Chat Completions (`/v1/chat/completions`, tools, streaming), OpenAI Responses
(`/v1/responses`), Anthropic Messages (`/v1/messages`, tools, streaming, `count_tokens`) and lists
its models (`/v1/models`). Replies are deterministic and chosen by the request's `model`:

- `simulator/script:<name>`: replies from a script, in order (`policies/script.py`);
- `simulator/echo`: the last user text;
- `simulator/target`: the demo target, a classifier steered by its harness (`policies/classify.py`);
- `simulator/worker`: the demo Worker, editing a prompt from its history (`policies/worker.py`);
- `simulator/modular-worker`: ModularRSI's Worker, every phase (`policies/modular_rsi/`);
- `simulator/reviewer`: ModularRSI's review alone, for a separate reviewer role;
- `simulator/evolver`: the Evolver's roles: diagnosis, WHY pick, candidate design, taxonomy
  induction (`policies/evolver/`).

Latency, jitter and faults (429, 500, hangs) are injected from a seeded generator.
"""

from flashrsi_dagster.offline_model.config import ServerConfig
from flashrsi_dagster.offline_model.log import RequestRecord
from flashrsi_dagster.offline_model.policies import ScriptedReply, ScriptError
from flashrsi_dagster.offline_model.server import OfflineModelServer

__all__ = ["OfflineModelServer", "RequestRecord", "ScriptError", "ScriptedReply", "ServerConfig"]
