"""Markdown views of what evolved, for the UI's metadata panel (engine, no Dagster): a
candidate's diff, a rollout's transcript, a Worker's activity, example rollouts of a round,
score charts, and the rounding every figure gets."""

from flashrsi_dagster.views.activity import Action, actions, worker_activity_markdown
from flashrsi_dagster.views.charts import ChartRow, RoundRow, bar, experiment_chart
from flashrsi_dagster.views.diffs import diff_markdown
from flashrsi_dagster.views.examples import pick_examples
from flashrsi_dagster.views.figures import (
    cost_text,
    duration_text,
    round_figure,
    round_figures,
    score_text,
)
from flashrsi_dagster.views.transcripts import trajectory_markdown

__all__ = [
    "Action",
    "ChartRow",
    "RoundRow",
    "actions",
    "bar",
    "cost_text",
    "diff_markdown",
    "duration_text",
    "experiment_chart",
    "pick_examples",
    "round_figure",
    "round_figures",
    "score_text",
    "trajectory_markdown",
    "worker_activity_markdown",
]
