from flashrsi_dagster.algorithms.meta_harness.records import RoundRecord
from flashrsi_dagster.assets.charts import WIDTH, bar, score_by_round


def test_bars_are_proportional_to_an_eighth_of_a_character():
    assert bar(0.0) == "" and bar(1.0) == "█" * WIDTH
    assert bar(0.5) == "█" * (WIDTH // 2)
    assert bar(1 / (WIDTH * 8)) == "▏"
    assert bar(7.0) == bar(1.0) and bar(-1.0) == ""  # clamped


def test_score_by_round_shows_rejections_and_marks_the_promoted_round():
    rounds = [
        RoundRecord(round=0, status="evaluated", dev_score=0.25),
        RoundRecord(round=1, status="rejected", reason="no-op"),
        RoundRecord(round=2, status="evaluated", dev_score=0.75),
    ]
    rows = score_by_round(rounds, promoted=2).splitlines()[2:]
    assert rows[0].startswith("| 0 | evaluated | 0.250 | `█████ ")
    assert rows[1] == "| 1 | rejected | - |  |"
    assert rows[2].endswith("` ← promoted |") and "0.750" in rows[2]
