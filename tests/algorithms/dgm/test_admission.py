"""DGM's load check on a hostile child (issue 24's red team): a file built to crash the host's
parser is a child that does not load, refused with the file named, never a host fault that
stops the experiment (the child is committed before it is checked, so a crash would recur on
every resume)."""

from __future__ import annotations

import pytest

from flashrsi_dagster.algorithms.dgm.admission import load_problems

DEEP = 100_000


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("agent.py", "x = " + "+".join(["1"] * DEEP) + "\n"),  # RecursionError in the compiler
        ("tools.py", "x = " + "-" * DEEP + "1\n"),  # MemoryError: the parser's stack
        ("config.json", "[" * DEEP + "]" * DEEP),  # RecursionError in the decoder
        ("config.yaml", "[" * DEEP + "]" * DEEP),  # RecursionError in PyYAML
        ("aliases.yaml", "a: &a [x, x, x, x, x, x, x, x, x]\n"
         + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n"
                   for p, c in zip("abcdefgh", "bcdefghi", strict=True))),  # an alias bomb
    ],
)  # fmt: skip
def test_a_file_made_to_crash_the_parser_is_a_child_that_does_not_load(tmp_path, name, text):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "system.md").write_text("be brief\n")
    (tmp_path / name).write_text(text)

    problems = load_problems(tmp_path)

    assert len(problems) == 1 and problems[0].startswith(f"{name}: does not load")
