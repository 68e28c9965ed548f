"""`flashrsi finalize`: the finalize steps on their own, through the Dagster finalize job, once
the search is over; refused, with what comes first and nothing written, before."""

from __future__ import annotations

from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.cli import EXIT_BAD_INPUT, EXIT_OK, main
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from tests.algorithms.evolver.scripted import write_config
from tests.conftest import needs_jails

pytestmark = needs_jails


def test_finalize_runs_the_sealed_test_only_once_the_search_is_over(tmp_path, capsys):
    path = write_config(tmp_path, max_rounds=1, patience=1)
    evolver = Evolver(open_experiment(load_config(path)), log=lambda _: None)
    evolver.run(until="diagnose")  # the cold start only
    home = str(tmp_path / "home")

    assert main(["finalize", "--experiment", "evolver", "--home", home]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "promote/sealed_test refused: diagnose (round 1, diagnose) comes first" in err
    assert "flashrsi resume --experiment evolver" in err
    assert not evolver.layout.plan(1).exists()

    evolver.run(until="sealed_test")  # the search, to its end
    assert not evolver.layout.retention.exists()
    assert main(["finalize", "--experiment", "evolver", "--home", home]) == EXIT_OK
    out = capsys.readouterr().out
    assert "== sealed_test" in out and "unsealed test (test/e1, K=3)" in out
    assert evolver.layout.retention.exists()
    assert main(["finalize", "--experiment", "evolver", "--home", home]) == EXIT_OK  # done
    assert "== sealed_test" not in capsys.readouterr().out
