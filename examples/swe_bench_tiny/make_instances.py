# ruff: noqa: E501 (the instances' texts and edits are data, kept one per line)
"""Writes `instances.jsonl` from the tree under `repos/flashrsi__tinytext` (the base commit)
and the edits below (each instance's gold patch and test patch). Run it after changing the
tree or an instance: `.venv/bin/python examples/swe_bench_tiny/make_instances.py`."""

import json
import shutil
import tempfile
from pathlib import Path

from flashrsi_dagster.benchmarks.swe_bench import repos

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "repos" / "flashrsi__tinytext"
work = Path(tempfile.mkdtemp(prefix="tinytext-"))
base = repos.commit_tree(SRC, work / "base")


def diff(edits):
    d = work / "d"
    shutil.rmtree(d, ignore_errors=True)
    repos.commit_tree(SRC, d)
    for path, (old, new) in edits.items():
        f = d / path
        t = f.read_text()
        assert old in t, (path, old)
        f.write_text(t.replace(old, new, 1))
    repos.git(d, "add", "--all")
    return repos.git(d, "diff", "--cached", "HEAD")


instances = [
    dict(
        n=1,
        file="tinytext/slug.py",
        test="tests/test_slug.py",
        problem="slugify leaves separators at the ends and repeats them\n\n`slugify(\"  Hello,   World! \")` returns `'--hello----world--'`. A slug should have one separator between words and none at the start or end: `'hello-world'`.\n",
        gold={
            "tinytext/slug.py": (
                '    return re.sub(r"[^a-z0-9]", separator, text.lower())',
                '    words = re.split(r"[^a-z0-9]+", text.lower())\n    return separator.join(word for word in words if word)',
            )
        },
        tests={
            "tests/test_slug.py": (
                'def test_custom_separator():\n    assert slugify("a b", separator="_") == "a_b"\n',
                'def test_custom_separator():\n    assert slugify("a b", separator="_") == "a_b"\n\n\ndef test_collapses_runs_of_separators():\n    assert slugify("Hello,   World") == "hello-world"\n\n\ndef test_strips_separators_at_the_ends():\n    assert slugify("  Hello!  ") == "hello"\n',
            )
        },
        f2p=[
            "tests/test_slug.py::test_collapses_runs_of_separators",
            "tests/test_slug.py::test_strips_separators_at_the_ends",
        ],
        p2p=[
            "tests/test_slug.py::test_lower_cases",
            "tests/test_slug.py::test_replaces_a_space",
            "tests/test_slug.py::test_custom_separator",
        ],
    ),
    dict(
        n=2,
        file="tinytext/wrap.py",
        test="tests/test_wrap.py",
        problem="truncate returns text longer than the width\n\n`truncate(\"abcdefghij\", 6)` returns `'abcdef...'`, 9 characters. The docstring says the result is `width` characters in all, ellipsis included: `'abc...'`.\n",
        gold={
            "tinytext/wrap.py": (
                "    return text[:width] + ellipsis",
                "    return text[: max(width - len(ellipsis), 0)] + ellipsis",
            )
        },
        tests={
            "tests/test_wrap.py": (
                'def test_exact_width_is_unchanged():\n    assert truncate("abcde", 5) == "abcde"\n',
                'def test_exact_width_is_unchanged():\n    assert truncate("abcde", 5) == "abcde"\n\n\ndef test_long_text_fits_the_width_with_its_ellipsis():\n    assert truncate("abcdefghij", 6) == "abc..."\n',
            )
        },
        f2p=["tests/test_wrap.py::test_long_text_fits_the_width_with_its_ellipsis"],
        p2p=[
            "tests/test_wrap.py::test_short_text_is_unchanged",
            "tests/test_wrap.py::test_exact_width_is_unchanged",
        ],
    ),
    dict(
        n=3,
        file="tinytext/stats.py",
        test="tests/test_stats.py",
        problem='word_count counts empty words\n\n`word_count("one  two")` (two spaces) returns 3, and `word_count("one\\ttwo\\nthree")` returns 1. Words are separated by any whitespace, however much: both should count 2 and 3.\n',
        gold={
            "tinytext/stats.py": (
                '    if not text:\n        return 0\n    return len(text.split(" "))',
                "    return len(text.split())",
            )
        },
        tests={
            "tests/test_stats.py": (
                'def test_single_spaces():\n    assert word_count("one two three") == 3\n',
                'def test_single_spaces():\n    assert word_count("one two three") == 3\n\n\ndef test_runs_of_whitespace():\n    assert word_count("one  two") == 2\n    assert word_count("one\\ttwo\\nthree") == 3\n',
            )
        },
        f2p=["tests/test_stats.py::test_runs_of_whitespace"],
        p2p=[
            "tests/test_stats.py::test_empty_text_has_no_words",
            "tests/test_stats.py::test_single_spaces",
        ],
    ),
]
rows = []
for i in instances:
    rows.append(
        {
            "repo": "flashrsi/tinytext",
            "instance_id": f"flashrsi__tinytext-{i['n']}",
            "base_commit": base,
            "patch": diff(i["gold"]),
            "test_patch": diff(i["tests"]),
            "problem_statement": i["problem"],
            "hints_text": "",
            "created_at": f"2026-01-0{i['n']}T00:00:00Z",
            "version": "0.1",
            "FAIL_TO_PASS": json.dumps(i["f2p"]),
            "PASS_TO_PASS": json.dumps(i["p2p"]),
            "environment_setup_commit": base,
        }
    )
(ROOT / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
shutil.rmtree(work)
print(f"{len(rows)} instances on base commit {base}")
