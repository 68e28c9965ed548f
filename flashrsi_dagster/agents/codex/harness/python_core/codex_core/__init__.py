"""FlashRSI's Python Codex core: Codex's tools and events over the OpenAI Responses API.

Runs from a copy in the call's own home (`CODEX_HOME`), imports only the standard library,
`openai` and `yaml`, and never starts a native Codex CLI."""
