"""The model gateway between jailed agents and real endpoints: keys, per-run tokens, metering,
caps. Plain Python (no Dagster): see `server.py` for the thread model."""

from flashrsi_dagster.gateway.errors import GatewayError
from flashrsi_dagster.gateway.grants import Caps, Upstream, WebAccess
from flashrsi_dagster.gateway.metering import RunUsage, Usage
from flashrsi_dagster.gateway.server import Gateway

__all__ = ["Caps", "Gateway", "GatewayError", "RunUsage", "Upstream", "Usage", "WebAccess"]
