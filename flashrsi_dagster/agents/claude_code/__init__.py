"""Claude Code through the official `claude-agent-sdk` (optional extra `claude`).

`adapter.py` is the `Agent`; `run_dir.py` the per-run temporary folder and its plugin;
`extensions.py` reads the snapshot's MCP servers and settings; `limits.py` holds the role's
budgets and permissions as CLI options and the framework's tool-call hook; `login.py` reads the
native login for `llm.auth: login`; `options.py` maps the role config to SDK options and CLI
environment; `session.py` drives one SDK session under the role's timeout; `transcript.py` turns
SDK messages into trajectory data; `processes.py` finds and stops what a run left running.
"""
