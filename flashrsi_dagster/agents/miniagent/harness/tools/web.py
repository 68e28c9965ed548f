"""The web, through the model gateway (the jail's only way out): `web_fetch` reads one page,
`web_search` reads a page of search results. Offered only when the run's role has
`web.enabled` (search: when the role has a search page, or the offline simulator)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from runtime.context import Context
from runtime.tool_result import bound

from tools.base import BaseTool, ToolError, string_arg

TIMEOUT = 60.0  # seconds; the gateway bounds each fetch by the role's web.timeout first


class WebFetchTool(BaseTool):
    name = "web_fetch"

    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        """Tool use: the page at `url` as text, bounded; its HTTP status first."""
        page = gateway_post(ctx, "/web/fetch", {"url": string_arg(arguments, "url")})
        return bound(render(page), ctx.output_limit)


class WebSearchTool(BaseTool):
    name = "web_search"

    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        """Tool use: the search results page for `query`, as text, bounded."""
        query = string_arg(arguments, "query")
        if not query.strip():
            raise ToolError("'query' is empty")
        page = gateway_post(ctx, "/web/search", {"query": query})
        return bound(render(page), ctx.output_limit)


def gateway_post(ctx: Context, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The gateway's JSON answer to `body` at `path`, with the run's token."""
    if not ctx.web or not ctx.web.get("base_url"):
        raise ToolError("the web is not available in this run")
    request = urllib.request.Request(
        ctx.web["base_url"].rstrip("/") + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {ctx.web['token']}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            page = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ToolError(f"the request was refused: {_message(exc)}") from None
    except (OSError, ValueError) as exc:
        raise ToolError(f"the request failed: {exc}") from None
    if not isinstance(page, dict):
        raise ToolError("the gateway answered no page")
    return page


def render(page: dict[str, Any]) -> str:
    """A page as the model reads it: status and type, a redirect's target, then the text."""
    head = f"HTTP {page.get('status')} {page.get('content_type') or ''}".rstrip()
    if page.get("location"):
        head += f"\nLocation: {page['location']}"
    if page.get("truncated"):
        head += "\n(the page was cut at the gateway's size limit)"
    return f"{head}\n\n{page.get('text', '')}"


def _message(error: urllib.error.HTTPError) -> str:
    try:
        return json.loads(error.read())["error"]["message"]
    except (ValueError, KeyError, TypeError, OSError):
        return f"HTTP {error.code}"
