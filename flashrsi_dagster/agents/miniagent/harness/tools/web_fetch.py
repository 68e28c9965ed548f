"""Fetch one web page through the model gateway (the jail's only way out); offered only when
the run's role has `web.enabled`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from runtime.context import Context
from runtime.tool_result import bound

from tools.base import BaseTool, ToolError, string_arg


class WebFetchTool(BaseTool):
    name = "web_fetch"

    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        """Tool use: the page at `url` as text, bounded; its HTTP status first."""
        url = string_arg(arguments, "url")
        if not ctx.web or not ctx.web.get("base_url"):
            raise ToolError("the web is not available in this run")
        request = urllib.request.Request(
            ctx.web["base_url"].rstrip("/") + "/web/fetch",
            data=json.dumps({"url": url}).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {ctx.web['token']}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                page = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ToolError(f"the fetch was refused: {_message(exc)}") from None
        except (OSError, ValueError) as exc:
            raise ToolError(f"the fetch failed: {exc}") from None
        head = f"HTTP {page.get('status')} {page.get('content_type') or ''}".rstrip()
        if page.get("location"):
            head += f"\nLocation: {page['location']}"
        if page.get("truncated"):
            head += "\n(the page was cut at the gateway's size limit)"
        return bound(f"{head}\n\n{page.get('text', '')}", ctx.output_limit)


def _message(error: urllib.error.HTTPError) -> str:
    try:
        return json.loads(error.read())["error"]["message"]
    except (ValueError, KeyError, TypeError, OSError):
        return f"HTTP {error.code}"
