"""Harbor's own `oracle` and `nop` agents as FlashRSI target types (`harbor-oracle`,
`harbor-nop`): for checking a task suite — the oracle must score 1, nop must score 0."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.agents.base import Agent
from flashrsi_dagster.records import Trajectory

HARNESS = Path(__file__).with_name("builtin_agent_harness")


class HarborBuiltinAgent(Agent):
    harbor_name: str
    description = "One of Harbor's own agents; runs only inside a Harbor trial."
    task_environment_only = True

    @classmethod
    def builtin_harness(cls) -> Path:
        # Harbor's agents have no files to evolve; the snapshot store still wants a seed.
        return HARNESS

    def _run(self, working_dir: Path, instruction: str) -> Trajectory:
        raise RuntimeError(
            f"{self.name} runs only inside a Harbor trial: use it with the terminal_bench benchmark"
        )


class HarborOracle(HarborBuiltinAgent):
    name = "harbor-oracle"
    harbor_name = "oracle"


class HarborNop(HarborBuiltinAgent):
    name = "harbor-nop"
    harbor_name = "nop"
