"""Random search's `algorithm` section: how many rounds, the edits to draw from, the draw's seed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import Field, model_validator

from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import MAX_STEPS, Count, Section


class Edit(Section):
    """One edit of a harness file: `append` text to it, or replace `find` by `replace`."""

    file: str = Field(description="The harness file, relative to the harness folder.")
    append: str | None = Field(None, description="Text added at the end of the file.")
    find: str | None = Field(None, description="Text replaced (its first occurrence).")
    replace: str | None = Field(None, description="What `find` is replaced by.")

    @model_validator(mode="after")
    def _one_kind(self) -> Edit:
        path = PurePosixPath(self.file)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"file: {self.file!r} is not a path inside the harness")
        if (self.append is None) == (self.find is None) or (self.find is None) != (
            self.replace is None
        ):
            raise ValueError("an edit gives `append`, or `find` and `replace`")
        return self

    def apply(self, text: str) -> str | None:
        """The file's text after the edit; None when `find` is not in it."""
        if self.append is not None:
            return text + self.append
        if self.find not in text:
            return None
        return text.replace(self.find, self.replace or "", 1)  # type: ignore[arg-type]


class RandomSearchConfig(AlgorithmSection):
    name: Literal["random_search"]
    rounds: Count = Field(3, ge=1, le=MAX_STEPS, description="Rounds after the seed's.")
    edits: list[Edit] = Field(min_length=1, description="The edits each round draws one of.")
    seed: int = Field(0, description="Seeds the draw: the same seed draws the same edits.")

    def seed_problems(self, harness: Path, declared: Callable[[str], bool]) -> list[str]:
        problems = []
        for i, edit in enumerate(self.edits):
            where = f"algorithm.edits.{i}.file"
            if not (harness / edit.file).is_file():
                problems.append(f"{where}: {edit.file!r} is not a file of the seed harness")
            elif not declared(edit.file):
                problems.append(f"{where}: {edit.file!r} is not declared in components.yaml")
            elif edit.apply((harness / edit.file).read_text()) is None:
                problems.append(f"algorithm.edits.{i}.find: not in the seed's {edit.file}")
        return problems
