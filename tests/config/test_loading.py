"""Loading a valid config: overrides typed by the schema, paths, secrets, YAML values."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.config import ConfigError, MissingSecretError, SecretRef, load_config
from flashrsi_dagster.config.models import (
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_RETRIES,
    MAX_STEPS,
    MAX_TASKS,
    MAX_TIMEOUT,
    MAX_TOKENS,
    MAX_TURNS,
)
from flashrsi_dagster.experiment.identity import normalised
from tests.conftest import VALID


def test_valid_config_loads_with_defaults(config_dir):
    config = load_config(config_dir / "exp.yaml")

    assert config.experiment.name == "exp-1"
    assert config.algorithm.max_steps == 4
    assert config.algorithm.worker.type == "miniagent"
    assert config.agent.llm.api == "chat"
    assert config.benchmark.split_counts.test == 20


def test_relative_paths_resolve_against_the_yaml_folder(config_dir):
    config = load_config(config_dir / "exp.yaml")

    assert config.agent.source_dir == (config_dir / "harness").resolve()


def test_default_home_is_under_the_working_directory(config_dir):
    config = load_config(config_dir / "exp.yaml")

    assert config.experiment.home == Path.cwd() / ".flashrsi"
    assert config.experiment.dir == Path.cwd() / ".flashrsi" / "exp-1"


def test_overrides_are_coerced_by_the_schema(config_dir):
    config = load_config(
        config_dir / "exp.yaml",
        [
            "--algorithm.max_steps",
            "2",
            "--benchmark.limit=9",
            "--experiment.name",
            "123",
            "--agent.llm.temperature",
            "0.5",
            "--benchmark.split_counts.dev",
            "3",
        ],
    )

    assert config.algorithm.max_steps == 2
    assert config.benchmark.limit == 9
    assert config.experiment.name == "123"  # a str field keeps the text, not the int
    assert config.agent.llm.temperature == 0.5
    assert config.benchmark.split_counts.dev == 3


def test_override_paths_are_relative_to_the_working_directory(config_dir):
    (Path.cwd() / "other").mkdir()

    config = load_config(config_dir / "exp.yaml", ["--agent.source_dir", "other"])

    assert config.agent.source_dir == Path.cwd() / "other"


def test_override_can_create_an_optional_section(config_dir):
    config = load_config(config_dir / "exp.yaml", ["--agent.llm.reasoning.effort", "high"])

    assert config.agent.llm.reasoning.effort == "high"


def test_secrets_stay_references_until_resolved(config_dir, canary):
    config = load_config(config_dir / "exp.yaml")

    key = config.agent.llm.api_key
    assert isinstance(key, SecretRef)
    assert key == "${FLASHRSI_TEST_CANARY_API_KEY}"
    assert normalised(config)["agent"]["llm"]["api_key"] == "${FLASHRSI_TEST_CANARY_API_KEY}"
    assert key.resolve() == canary
    assert config.secret_refs() == [key]


def test_an_unset_secret_fails_only_when_resolved(config_dir, monkeypatch):
    monkeypatch.delenv("FLASHRSI_TEST_CANARY_API_KEY", raising=False)
    config = load_config(config_dir / "exp.yaml")

    with pytest.raises(MissingSecretError, match="FLASHRSI_TEST_CANARY_API_KEY is not set"):
        config.agent.llm.api_key.resolve()


def test_non_json_yaml_values_in_extra_body_are_refused_naming_the_key(config_dir):
    """A date, bytes or a set in `extra_body` made every model call fail (the SDKs send it as
    JSON): refused when the config is read, no longer recorded as tagged YAML."""
    path = config_dir / "exp.yaml"
    path.write_text(
        path.read_text().replace(
            "    base_url: offline\n    api_key",
            "    base_url: offline\n    extra_body: {since: 2024-05-01, raw: !!binary AAEC,"
            " tags: !!set {a, b}}\n    api_key",
            1,
        )
    )

    with pytest.raises(ConfigError) as info:
        load_config(path)

    [problem] = info.value.problems
    assert problem.render().startswith("agent.llm.extra_body (line 10): every request carries")


def test_all_problems_are_reported_together(config_dir):
    path = config_dir / "exp.yaml"
    path.write_text(path.read_text().replace("max_steps: 4", "max_steps: 0\n  maxsteps: 1"))

    with pytest.raises(ConfigError) as info:
        load_config(path)

    rendered = [p.render() for p in info.value.problems]
    assert rendered == [
        "algorithm.max_steps (line 13): input should be greater than or equal to 1 (got 0)",
        "algorithm.maxsteps (line 14): unknown key 'maxsteps'; did you mean 'max_steps'?",
    ]


@pytest.mark.parametrize(
    "home",
    [
        "/tmp/task-runs/desk-0123456789abcdefghij/home",  # `sk-` inside a word: not a key
        "/tmp/task-runs/sk-proj-0123456789abcdefghij/home",  # a folder is a folder: not a key
    ],
)
def test_a_home_path_is_accepted_even_when_a_folder_looks_like_a_key(config_dir, home):
    path = config_dir / "exp.yaml"
    path.write_text(VALID.replace("  seed: 7\n", f"  seed: 7\n  home: {home}\n"))

    config = load_config(path)

    assert config.experiment.home == Path(home)


def test_a_literal_key_in_a_value_is_still_refused_without_being_echoed(config_dir):
    key = "sk-proj-0123456789abcdefghijklmnop"
    path = config_dir / "exp.yaml"
    path.write_text(
        VALID.replace(
            "    base_url: offline\n",
            f"    base_url: offline\n    extra_body: {{auth: {key}}}\n",
            1,
        )
    )

    with pytest.raises(ConfigError) as info:
        load_config(path)

    assert [p.render() for p in info.value.problems] == [
        "agent.llm.extra_body.auth (line 10): this looks like a literal secret; export it as an "
        "environment variable and write its reference instead, e.g. ${OPENAI_API_KEY}"
    ]
    assert key not in str(info.value)


COUNTS = [
    ("algorithm.max_steps", MAX_STEPS),
    ("agent.max_turns", MAX_TURNS),
    ("algorithm.worker.max_turns", MAX_TURNS),
    ("agent.llm.max_retries", MAX_RETRIES),
    ("agent.llm.max_tokens", MAX_TOKENS),
    ("agent.llm.reasoning.budget_tokens", MAX_TOKENS),
    ("benchmark.attempts", MAX_ATTEMPTS),
    ("benchmark.concurrency", MAX_CONCURRENCY),
    ("benchmark.limit", MAX_TASKS),
    ("benchmark.evolution_limit", MAX_TASKS),
    ("benchmark.max_infra_reruns", MAX_RETRIES),
    ("benchmark.split_counts.train", MAX_TASKS),
    ("benchmark.split_counts.dev", MAX_TASKS),
    ("benchmark.split_counts.test", MAX_TASKS),
]


def _problems(path: Path, overrides: list[str]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return [p.render() for p in info.value.problems]


@pytest.mark.parametrize(("key", "maximum"), COUNTS, ids=[key for key, _ in COUNTS])
def test_every_count_has_a_maximum_checked_at_validation(config_dir, key, maximum):
    path = config_dir / "exp.yaml"
    flag = f"--{key}"

    load_config(path, [flag, str(maximum)])
    over = _problems(path, [flag, str(maximum + 1)])
    huge = _problems(path, [flag, "1.0e+20"])  # a float, as YAML reads it

    expected = f"less than or equal to {maximum}"
    assert over == [f"{key} (set by {flag}): input should be {expected} (got {maximum + 1})"]
    assert len(huge) == 1
    assert huge[0].startswith(f"{key} (set by {flag}): input should be {expected} (got 1")


def test_a_huge_count_in_the_yaml_file_names_its_line(config_dir):
    path = config_dir / "exp.yaml"
    path.write_text(VALID.replace("max_steps: 4", "max_steps: 1.0e+20"))

    assert _problems(path, []) == [
        f"algorithm.max_steps (line 13): input should be less than or equal to {MAX_STEPS} "
        f"(got {10**20})"
    ]


@pytest.mark.parametrize(
    "key",
    [
        "agent.timeout",
        "agent.llm.timeout",
        "algorithm.worker.timeout",
        "algorithm.worker.llm.timeout",
    ],
)
@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_timeouts_must_be_finite(config_dir, key, value):
    problems = _problems(config_dir / "exp.yaml", [f"--{key}", value])

    assert problems == [f"{key} (set by --{key}): input should be a finite number (got {value})"]


def test_a_timeout_over_a_week_is_refused(config_dir):
    problems = _problems(config_dir / "exp.yaml", ["--agent.llm.timeout", "1e9"])

    assert problems == [
        "agent.llm.timeout (set by --agent.llm.timeout): input should be less than or equal "
        f"to {MAX_TIMEOUT:g} (got 1e9)"
    ]


@pytest.mark.parametrize("role", ["agent", "algorithm.worker"])
def test_a_run_must_outlast_one_model_call(config_dir, role):
    path = config_dir / "exp.yaml"

    assert _problems(path, [f"--{role}.timeout", "120"]) == [
        f"{role}.timeout (set by --{role}.timeout): expected more than this role's llm.timeout "
        "(120 s), got 120 s: one model call must fit in a run; raise this timeout or lower "
        "llm.timeout"
    ]
    assert _problems(path, [f"--{role}.llm.timeout", "900"])[0].startswith(f"{role}.timeout (line ")
    config = load_config(path, [f"--{role}.timeout", "121", f"--{role}.llm.timeout", "120"])
    assert config.roles()["target" if role == "agent" else "worker"].timeout == 121


def test_extra_body_passes_fields_the_framework_does_not_own(config_dir):
    config = load_config(
        config_dir / "exp.yaml", ["--agent.llm.extra_body", "{top_p: 0.5, seed: 3, user: me}"]
    )

    assert config.agent.llm.extra_body == {"top_p": 0.5, "seed": 3, "user": "me"}
