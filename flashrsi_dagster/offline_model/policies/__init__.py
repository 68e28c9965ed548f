"""Simulator policies: how each simulator model id decides its reply."""

from flashrsi_dagster.offline_model.policies.registry import (
    BUILTIN,
    SCRIPT_PREFIX,
    Policy,
    PolicyRegistry,
)
from flashrsi_dagster.offline_model.policies.script import ScriptedReply, ScriptError

__all__ = ["BUILTIN", "SCRIPT_PREFIX", "Policy", "PolicyRegistry", "ScriptError", "ScriptedReply"]
