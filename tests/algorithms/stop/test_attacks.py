"""Red-team attacks on STOP's tripwire and the host's side of an improver run (issue 24): an
improver that silences the runner's tripwire from inside its own process, floods the host
with forged events or with output. Real parts, as in `test_sandbox.py`."""

from __future__ import annotations

import resource

import pytest

from flashrsi_dagster.algorithms.stop.code_scan import scan_code
from flashrsi_dagster.algorithms.stop.records import ATTEMPT_KINDS
from flashrsi_dagster.algorithms.stop.sandbox import MAX_ATTEMPTS
from tests.algorithms.stop.test_sandbox import _run, kinds
from tests.conftest import needs_jails

jailed = needs_jails


def _improver(body: str) -> str:
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    return f"def improve(solution, utility, model, budget):\n{lines}    return solution\n"


@jailed
@pytest.mark.parametrize(
    "silence",
    [
        "runner._port = None",  # the port the tripwire reports to
        "runner._inside_hook = True",  # its guard against reporting its own reports
    ],
)
def test_silencing_the_tripwire_through_the_runner_module_still_gets_flagged(silence):
    code = _improver(
        f"import sys\nrunner = sys.modules['__main__']\n{silence}\n"
        "try:\n    open('/root/.bashrc')\nexcept OSError:\n    pass"
    )
    outcome = _run(code)

    assert "host_file_read" in kinds(outcome)


@jailed
def test_forged_events_are_bounded_and_kept_to_the_known_kinds():
    code = _improver(
        "import json, sys\nrunner = sys.modules['__main__']\n"
        "port = json.load(open('job.json'))['utility_port']\n"
        "for i in range(300):\n"
        "    runner._ask(port, {'op': 'event', 'kind': 'x' * 40, 'detail': 'y' * 300})"
    )
    outcome = _run(code)

    assert len(outcome.attempts) <= MAX_ATTEMPTS + 1  # the rest counted in one line
    assert {a.kind for a in outcome.attempts} <= set(ATTEMPT_KINDS)
    assert "tripwire_tamper" in kinds(outcome)
    assert "300" in outcome.attempts[-1].detail


@jailed
def test_an_output_flood_does_not_fill_the_hosts_memory():
    mib = 1 << 20
    code = _improver(
        "import os\nchunk = b'x' * (1 << 20)\n"
        "for i in range(384):\n    os.write(1, chunk)\n    os.write(2, chunk)"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    outcome = _run(code)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before

    assert outcome.solution == "seed"
    assert grown < 128 * mib  # 768 MiB written: the host kept a bounded tail


@pytest.mark.parametrize(
    "reach",
    [
        "import sys\n    sys.modules['__main__']._port = None",
        "exec('op' + 'en(\"/etc/shadow\")')",
        "__builtins__.open = print",
        "import os\n    os.path.abspath = lambda p: '/tmp/x'",
        "getattr(utility, 'b' + 'udget')",
        "import gc\n    gc.get_objects()",
        "import sys\n    sys._getframe(1).f_globals",
        "import posixpath as p\n    p.normpath = str",
        "import posixpath\n    setattr(posixpath, 'normpath', str)",
        "open.__self__.open = print",
    ],
)
def test_the_code_scan_flags_reaching_into_the_runner_or_the_runtime(reach):
    code = f"def improve(solution, utility, model, budget):\n    {reach}\n    return solution\n"

    assert "tripwire_tamper" in {a.kind for a in scan_code(code)}
