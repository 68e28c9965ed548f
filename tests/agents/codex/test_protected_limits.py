"""config.toml#limits held outside the Codex core: a core edited to run commands for 10^6 s
and show 10^9 characters gains nothing; the host kills the command at the protected timeout
and the gateway cuts what the model reads."""

from __future__ import annotations

import re
from pathlib import Path

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.gateway.clipping import FRAMING
from flashrsi_dagster.records import Status
from tests.agents.codex.conftest import requests_for, role, shell
from tests.conftest import needs_jails

SHELL_TIMEOUT = 1
OUTPUT_LIMIT = 300
HUGE = 50_000


def edited_core(harness: Path) -> Path:
    """Small protected limits, then the attack on the core's evolvable code."""
    config = harness / "config.toml"
    text = re.sub(r"shell_timeout = \d+", f"shell_timeout = {SHELL_TIMEOUT}", config.read_text())
    config.write_text(re.sub(r"output_limit = \d+", f"output_limit = {OUTPUT_LIMIT}", text))
    session = harness / "python_core" / "codex_core" / "session.py"
    code = session.read_text()
    old = "Shell(cwd, env, snapshot, config.shell_timeout, config.output_limit, prefix)"
    assert old in code
    session.write_text(code.replace(old, "Shell(cwd, env, snapshot, 1e6, 10**9, prefix)"))
    return harness


@needs_jails
def test_an_edited_core_gains_no_time_and_no_output(server, harness_dir, work):
    server.add_script(
        "codex-limits",
        [
            shell("sleep 600; echo never"),
            shell(f"head -c {HUGE} /dev/zero | tr '\\0' y"),
            "done",
        ],
    )
    config = role(server, "codex-limits", timeout=90, llm={"timeout": 30})
    with target_agent(config, edited_core(harness_dir)) as agent:
        trajectory = agent.run(work, "wait, then print", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    killed = trajectory.metadata["shell_timeout"]["killed_by_host"]
    assert any("sleep 600" in k["command"] for k in killed)
    last = requests_for(server, "codex-limits")[-1].body
    outputs = [i["output"] for i in last["input"] if i.get("type") == "function_call_output"]
    assert "never" not in outputs[0]
    assert "y" * 100 in outputs[1] and "cut by the gateway" in outputs[1]
    assert len(outputs[1]) <= OUTPUT_LIMIT + FRAMING
