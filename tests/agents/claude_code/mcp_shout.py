"""A tiny stdio MCP server (stdlib only): one tool, `shout`, that upper-cases its text."""

import json
import sys

TOOL = {
    "name": "shout",
    "description": "Upper-cases the given text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2024-11-05"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1.0"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        text = params["arguments"]["text"].upper()
        return {"content": [{"type": "text", "text": f"SHOUTED: {text}"}]}
    return {}


for line in sys.stdin:
    request = json.loads(line)
    if "id" in request:  # notifications get no answer
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
        print(json.dumps(reply), flush=True)
