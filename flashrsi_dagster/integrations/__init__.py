"""Bindings of FlashRSI agents to outside executors: `harbor.bind(agent)` runs the agent
inside Harbor task environments (see `staging`, `inside` and `container_entry`)."""
