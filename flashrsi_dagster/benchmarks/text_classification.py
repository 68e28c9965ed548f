"""Text classification: the agent reads a text and answers with one label.

Built in and offline: the prompt-injection corpus that the PyPI package `bastioncorpus` ships
(MIT licence; 181 labelled rows, `benign` or `malicious`, in five languages). It was chosen over
`chatterbot-corpus` (BSD, dialog lines by topic) because its labels are a real decision whose
boundary a harness can learn — "ignore case when you sort" is benign, "ignore all previous
instructions" is not — so a better prompt or skill measurably scores better.

Another dataset can be given as `data_path`: a JSONL file of `{"id", "text", "label"}` rows,
optionally with `"split"`. The score is normalised exact match (case, surrounding space and
punctuation, and a leading `Label:` are ignored).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from flashrsi_dagster import instruction_markers as markers
from flashrsi_dagster.agents.base import Agent
from flashrsi_dagster.benchmarks.base import BenchmarkError, Secret, Task
from flashrsi_dagster.config.models import BenchmarkConfig
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.scratch import scratch_dir

DEFAULT_SPLIT_COUNTS = {"train": 60, "dev": 40, "test": 80}
"""Of the 180 distinct built-in rows: dev and test large enough for paired statistics."""

CANARY = "CANARY-7731"
"""Some rows carry a `{canary}` slot (a token the attack tries to smuggle out); filled fixed."""


class TextClassification:
    name = "text_classification"
    solved_with_tools = False
    default_split_counts = DEFAULT_SPLIT_COUNTS

    def __init__(self, data_path: Path | None = None) -> None:
        self.data_path = data_path
        rows = _read_jsonl(data_path) if data_path else _builtin_rows()
        self.labels = sorted({str(row["label"]) for row in rows})
        self._rows = rows

    @classmethod
    def from_config(cls, config: BenchmarkConfig) -> TextClassification:
        return cls(config.data_path)

    def tasks(self) -> list[Task]:
        return [_task(row, self.labels) for row in self._rows]

    def tasks_from(self, path: Path) -> list[Task]:
        """Tasks of another file in this benchmark's format (e.g. evolution data)."""
        return [_task(row, self.labels) for row in _read_jsonl(path)]

    def adapter_problem(self, adapter: type[Agent]) -> str | None:
        if adapter.task_environment_only:
            return (
                f"{adapter.name} runs only inside a task's own environment, and "
                f"{self.name} tasks have none (use it with benchmark.name: terminal_bench)"
            )
        return None

    def secrets(self, task: Task) -> list[Secret]:
        """The text (the instruction's template is the same for every task, so it is no
        secret) and its label."""
        text = task.instruction.partition(f"\n{markers.TEXT} ")[2] or task.instruction
        return [Secret("input", "text", text), Secret("answer", "label", task.verifier["label"])]

    def rollout(self, agent: Agent, task: Task, *, split: str, attempt: int) -> Trajectory:
        with scratch_dir("task-") as work:
            trajectory = agent.run(
                work, task.instruction, task_id=task.id, split=split, attempt=attempt
            )
        return score(task, trajectory)


def score(task: Task, trajectory: Trajectory) -> Trajectory:
    expected = task.verifier["label"]
    metadata = {**trajectory.metadata, "expected": expected}
    if trajectory.status != Status.SUCCESS:
        return trajectory.model_copy(update={"score": 0.0, "metadata": metadata})
    correct = normalise(trajectory.answer or "") == normalise(expected)
    return trajectory.model_copy(
        update={
            "score": 1.0 if correct else 0.0,
            "status": Status.SUCCESS if correct else Status.FAILURE,
            "metadata": metadata,
        }
    )


def normalise(answer: str) -> str:
    text = answer.strip().lower()
    text = re.sub(r"^(final\s+)?(answer|label)\s*[:\-]\s*", "", text)
    return text.strip(" \t\n\"'`.!*")


def instruction(text: str, labels: list[str]) -> str:
    return (
        "Classify the text below. Reply with exactly one label and nothing else.\n"
        f"{markers.LABELS} {', '.join(labels)}\n"
        f"{markers.TEXT} {text}"
    )


def _task(row: dict, labels: list[str]) -> Task:
    metadata = {k: v for k, v in row.items() if k not in ("id", "text", "label")}
    return Task(
        id=str(row["id"]),
        instruction=instruction(row["text"], labels),
        verifier={"label": str(row["label"])},
        metadata=metadata,
    )


def _builtin_rows() -> list[dict]:
    """The corpus, minus rows whose text repeats an earlier row (one pair in 0.6.0): the same
    text under two ids would leak between splits."""
    import bastioncorpus

    rows: dict[str, dict] = {}
    for row in bastioncorpus.load_corpus():
        text = row.render(CANARY)
        rows.setdefault(
            text,
            {
                "id": row.id,
                "text": text,
                "label": row.label,
                "category": row.category,
                "lang": row.lang,
            },
        )
    return list(rows.values())


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(_text_of(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenchmarkError(f"{path}: line {number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise BenchmarkError(
                f"{path}: line {number}: expected a JSON object with id, text and label, "
                f"got {type(row).__name__}"
            )
        missing = [
            key
            for key in ("id", "text", "label")
            if not isinstance(row.get(key), str | int) or row.get(key) == ""
        ]
        if missing:
            raise BenchmarkError(
                f"{path}: line {number}: missing, empty or non-text {', '.join(missing)}"
            )
        rows.append(row)
    if not rows:
        raise BenchmarkError(f"{path}: no rows; expected JSON Lines of {{id, text, label}}")
    return rows


def _text_of(path: Path) -> str:
    if path.is_dir():
        raise BenchmarkError(
            f"{path}: a folder; text_classification reads one JSON Lines file of "
            "{id, text, label} rows"
        )
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise BenchmarkError(f"{path}: not UTF-8 text (byte {exc.start})") from None
