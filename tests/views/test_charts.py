"""Score by round: one table per experiment, bars, best so far, reasons, the promoted round."""

from __future__ import annotations

from pydantic import BaseModel

from flashrsi_dagster.views import RoundRow, bar, experiment_chart
from flashrsi_dagster.views.charts import WIDTH


def _table(chart: str) -> list[str]:
    """The data rows of the chart's tables (header and rule left out)."""
    rows = [line for line in chart.splitlines() if line.startswith("|")]
    return [row for row in rows if not row.startswith(("| round", "|---"))]


def test_bars_are_proportional_to_an_eighth_of_a_character():
    assert bar(0.0) == "" and bar(1.0) == "█" * WIDTH
    assert bar(0.5) == "█" * (WIDTH // 2)
    assert bar(1 / (WIDTH * 8)) == "▏"
    assert bar(7.0) == bar(1.0) and bar(-1.0) == ""  # clamped


def test_one_experiment_shows_scores_best_so_far_reasons_and_the_promoted_round():
    rows = [
        RoundRow("exp", 0, "c0", "evaluated", 0.25),
        RoundRow("exp", 1, "c0", "rejected", reason="the edit changed no declared file"),
        RoundRow("exp", 2, "c0", "evaluated", 0.7504, promoted=True),
        RoundRow("exp", 3, "c0", "evaluated", 0.5),
    ]

    chart = experiment_chart(rows)

    assert chart.startswith(
        "**`exp`**: 4 rounds, 1 candidate not evaluated, best 0.750 at round 2, promoted: round 2"
    )
    assert _table(chart) == [
        f"| 0 | c0 | evaluated | 0.250 | `{bar(0.25):<{WIDTH}}` | 0.250 |  |",
        "| 1 | c0 | rejected | - |  | 0.250 | the edit changed no declared file |",
        f"| 2 | c0 | evaluated | 0.750 | `{bar(0.7504):<{WIDTH}}` | 0.750 | ← promoted |",
        f"| 3 | c0 | evaluated | 0.500 | `{bar(0.5):<{WIDTH}}` | 0.750 |  |",
    ]


def test_best_so_far_covers_every_slot_of_the_round_and_reasons_stay_in_their_cell():
    rows = [
        RoundRow("exp", 1, "b", "evaluated", 0.9),
        RoundRow("exp", 1, "a", "rejected", reason="review | gate\nfailed"),
        RoundRow("exp", 0, "a", "evaluated", 0.4),
    ]

    table = _table(experiment_chart(rows))

    assert [row.split(" | ")[:2] for row in table] == [["| 0", "a"], ["| 1", "a"], ["| 1", "b"]]
    assert table[1].endswith(r"| 0.900 | review \| gate ⏎ failed |")
    assert "nothing promoted yet" in experiment_chart(rows)


def test_several_experiments_get_one_table_each():
    rows = [
        RoundRow("beta", 0, "c0", "evaluated", 0.1),
        RoundRow("alpha", 0, "c0", "evaluated", 0.9),
        RoundRow("beta", 1, "c0", "evaluated", 0.2, promoted=True),
    ]

    chart = experiment_chart(rows)

    alpha, beta = chart.split("**`beta`**")
    assert alpha.startswith("**`alpha`**") and alpha.count("| round |") == 1
    assert len(_table(alpha)) == 1 and "0.900" in alpha
    assert beta.count("| round |") == 1 and len(_table(beta)) == 2
    assert "0.900" not in beta  # alpha's best is not beta's


def test_rows_may_be_any_model_with_the_fields():
    class Row(BaseModel):
        experiment: str
        round: int
        slot: str
        status: str
        dev_score: float | None
        reason: str | None = None
        promoted: bool = False

    chart = experiment_chart([Row(experiment="e", round=0, slot="s", status="seed", dev_score=1)])

    assert _table(chart)[0].startswith("| 0 | s | seed | 1.000 |")
    assert experiment_chart([]) == "_No rounds yet._\n"
