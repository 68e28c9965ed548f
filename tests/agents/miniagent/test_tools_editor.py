"""editor: view, create, str_replace and insert inside the task folder, never outside it."""

from __future__ import annotations

import pytest


@pytest.fixture
def editor(harness):
    return harness.tools.build_tools(["editor"])["editor"]


@pytest.fixture
def edit(editor, ctx):
    def run(command: str, path: str, **arguments) -> str:
        return editor.run({"command": command, "path": path, **arguments}, ctx)

    return run


@pytest.fixture
def poem(ctx):
    path = ctx.working_dir / "poem.txt"
    path.write_text("one\ntwo\nthree\nfour\n")
    return path


def test_create_writes_the_file_and_its_folders(edit, ctx):
    assert edit("create", "src/pkg/mod.py", file_text="a = 1\nb = 2\n") == (
        "Created src/pkg/mod.py (2 lines)"
    )
    assert (ctx.working_dir / "src/pkg/mod.py").read_text() == "a = 1\nb = 2\n"


def test_create_overwrites_an_existing_file(edit, poem):
    assert edit("create", "poem.txt", file_text="new\n") == "Overwrote poem.txt (1 lines)"
    assert poem.read_text() == "new\n"


def test_view_numbers_lines_cat_style(edit, poem):
    assert edit("view", "poem.txt") == "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"


@pytest.mark.parametrize(
    ("view_range", "first", "last"), [([2, 3], 2, 3), ([3, -1], 3, 4), ([1, 99], 1, 4)]
)
def test_view_honours_the_range(edit, poem, view_range, first, last):
    lines = edit("view", "poem.txt", view_range=view_range).splitlines()

    assert [int(line.split("\t")[0]) for line in lines] == list(range(first, last + 1))


@pytest.mark.parametrize("view_range", [[0, 2], [3, 2], [9, -1], [1], ["1", "2"]])
def test_a_bad_view_range_is_an_error(edit, poem, view_range):
    assert edit("view", "poem.txt", view_range=view_range).startswith("Error: 'view_range'")


def test_view_of_a_folder_lists_two_levels_without_hidden_entries(edit, ctx):
    for rel in ["a/b/deep.txt", "a/file.txt", ".git/config", "a/.cache/x", ".env", "top.txt"]:
        (ctx.working_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (ctx.working_dir / rel).write_text("x")

    listing = edit("view", ".").splitlines()

    assert listing[1:] == ["a/", "a/b/", "a/file.txt", "top.txt"]


def test_str_replace_edits_the_single_occurrence_and_shows_it(edit, poem):
    result = edit("str_replace", "poem.txt", old_str="two\n", new_str="TWO\n2\n")

    assert poem.read_text() == "one\nTWO\n2\nthree\nfour\n"
    assert result.startswith("Edited poem.txt:\n")
    assert "     2\tTWO\n     3\t2" in result


def test_str_replace_without_new_str_deletes(edit, poem):
    edit("str_replace", "poem.txt", old_str="three\n")

    assert poem.read_text() == "one\ntwo\nfour\n"


def test_str_replace_refuses_a_missing_old_str(edit, poem):
    result = edit("str_replace", "poem.txt", old_str="five", new_str="5")

    assert result == "Error: old_str not found in poem.txt; nothing was changed"
    assert poem.read_text() == "one\ntwo\nthree\nfour\n"


def test_str_replace_refuses_an_ambiguous_old_str_naming_its_lines(edit, poem):
    poem.write_text("x = 1\ny = 2\nx = 1\n")

    result = edit("str_replace", "poem.txt", old_str="x = 1", new_str="x = 3")

    assert result.startswith("Error: old_str occurs 2 times in poem.txt (lines 1, 3)")
    assert poem.read_text() == "x = 1\ny = 2\nx = 1\n"


def test_str_replace_keeps_line_endings(edit, poem):
    poem.write_bytes(b"a\r\nb\r\n")

    edit("str_replace", "poem.txt", old_str="b", new_str="c")

    assert poem.read_bytes() == b"a\r\nc\r\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [(0, "new\none\ntwo\n"), (1, "one\nnew\ntwo\n"), (2, "one\ntwo\nnew\n")],
)
def test_insert_puts_new_str_after_the_line(edit, poem, line, expected):
    poem.write_text("one\ntwo\n")

    result = edit("insert", "poem.txt", insert_line=line, new_str="new")

    assert poem.read_text() == expected
    assert f"{line + 1:6}\tnew" in result


def test_insert_after_an_unterminated_last_line(edit, poem):
    poem.write_text("one")

    edit("insert", "poem.txt", insert_line=1, new_str="two\n")

    assert poem.read_text() == "one\ntwo\n"


def test_insert_refuses_a_line_past_the_end(edit, poem):
    assert edit("insert", "poem.txt", insert_line=9, new_str="x").startswith(
        "Error: 'insert_line' must be between 0 and 4"
    )


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/hostname", "a/../../outside.txt"])
def test_paths_outside_the_working_dir_are_refused(edit, path):
    assert "is outside the working directory" in edit("create", path, file_text="x")


def test_a_symlink_leading_outside_is_refused(edit, ctx, tmp_path):
    (ctx.working_dir / "link").symlink_to(tmp_path)

    assert "is outside the working directory" in edit("view", "link/harness")


def test_an_absolute_path_inside_the_working_dir_is_allowed(edit, ctx, poem):
    assert edit("view", str(poem)).startswith("     1\tone")


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"command": "delete", "path": "poem.txt"}, "Error: unknown command 'delete'"),
        ({"command": "view"}, "Error: 'path' must be a string"),
        ({"command": "view", "path": "missing.txt"}, "Error: missing.txt does not exist"),
        ({"command": "str_replace", "path": "."}, "Error: 'old_str' must be a string"),
        ({"command": "create", "path": "poem.txt"}, "Error: 'file_text' must be a string"),
        ({"command": "insert", "path": "poem.txt", "new_str": "x"}, "Error: 'insert_line'"),
    ],
)
def test_bad_arguments_are_errors_for_the_model(editor, ctx, poem, arguments, error):
    assert editor.run(arguments, ctx).startswith(error)


def test_output_is_bounded(edit, ctx, poem):
    ctx.output_limit = 300
    poem.write_text("".join(f"line {n}\n" for n in range(1000)))

    result = edit("view", "poem.txt")

    assert len(result) <= 300
    assert result.startswith("     1\tline 0") and result.endswith("  1000\tline 999")
