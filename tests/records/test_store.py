"""Reading records back: a record not written yet is None, a damaged one is an error that
names the file, and a record landing while it is read is never mistaken for a damaged one."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.records import RecordError, read_optional
from flashrsi_dagster.records.store import Record


class Note(Record):
    text: str


def test_a_record_not_written_yet_is_none(tmp_path):
    assert read_optional(tmp_path / "absent" / "note.json", Note) is None


def test_a_damaged_record_is_an_error_naming_its_file(tmp_path):
    path = tmp_path / "note.json"
    path.write_text('{"text": 3}')
    with pytest.raises(RecordError, match=r"note\.json: not a valid Note record: text"):
        read_optional(path, Note)


def test_something_else_at_the_record_s_path_is_an_error(tmp_path):
    (tmp_path / "note.json").mkdir()
    with pytest.raises(RecordError, match=r"note\.json: cannot read record"):
        read_optional(tmp_path / "note.json", Note)


def test_a_record_another_writer_lands_during_the_read_is_not_yet_there(tmp_path, monkeypatch):
    """The side-by-side ModularRSI branches met this: one branch's read found no schedule, the
    other's atomic write landed, and the first then saw a file and called the record
    unreadable. The landing is placed deterministically right after the failed open."""
    path = tmp_path / "schedule.json"
    opened = Path.read_text

    def read_then_land(self: Path, *args, **kwargs) -> str:
        try:
            return opened(self, *args, **kwargs)
        finally:
            if self == path and not path.exists():
                path.write_text(Note(text="landed").model_dump_json())

    monkeypatch.setattr(Path, "read_text", read_then_land)
    assert read_optional(path, Note) is None
    assert read_optional(path, Note).text == "landed"
