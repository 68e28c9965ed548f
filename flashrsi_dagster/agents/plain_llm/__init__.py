"""The plain-LLM agent: one model call, no tools. A target for prompt-only harnesses."""
