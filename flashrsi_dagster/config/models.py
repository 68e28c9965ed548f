"""The experiment config: one pydantic model per section, mirrored by the YAML file.

Relative paths resolve against the YAML file's folder (passed as validation context
`base_dir`); secrets are `${ENV_VAR}` references (`SecretRef`) resolved only when used.
"""

from __future__ import annotations

import encodings.idna
import ipaddress
import json
import math
import re
import socket
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import parse_qsl, unquote, urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from flashrsi_dagster.config.names import NAME_RULE, name_problem
from flashrsi_dagster.config.request_fields import owned_field_problems
from flashrsi_dagster.config.secrets import SecretRef
from flashrsi_dagster.records.redaction import MIN_SECRET_LENGTH

_ADAPTER_TYPE = re.compile(r"[a-z][a-z0-9_-]*|[A-Za-z_][\w.]*:[A-Za-z_]\w*")

# Upper bounds, checked at validation: a typo or a hostile override (`1e20`) must be an error
# naming the key, not gigabytes of task slots or a loop that never ends.
MAX_STEPS = 1_000
MAX_TURNS = 1_000
MAX_TOOL_CALLS = 100_000
MAX_ATTEMPTS = 100
MAX_CONCURRENCY = 256
MAX_TASKS = 100_000
"""Per split, and for `limit` / `evolution_limit`."""
MAX_RETRIES = 10
"""`llm.max_retries` and `benchmark.max_infra_reruns`."""
MAX_TOKENS = 1_000_000
MAX_PROMPT_CHARS = 4 * MAX_TOKENS
"""Characters of one prompt: about a million tokens' worth."""
MAX_TIMEOUT = 7 * 24 * 3600.0
"""Seconds: a week, for any timeout."""
MAX_PRICE = 100_000.0
"""USD per million tokens: far above any model's list price; the cost of a call stays finite."""
MIN_CALL_TIMEOUT = 1.0
"""Seconds: the least `llm.timeout` (and web fetch timeout). No endpoint answers a call in
less (`1e-300` validated, then every call of the role timed out)."""
SECRET_QUERY_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "sig", "signature",
     "auth", "authorization", "credential", "credentials", "session", "code", "bearer", "jwt",
     "pass", "sk"}
)  # fmt: skip
"""Words of a URL query parameter's name that mark it a credential (`key`, `api_key`,
`access_token`, `x-goog-api-key`, `apiKey`, Azure Functions' `code`, `bearer`, `jwt`);
`api-version` and the like are kept."""
KEY_IN_PATH = re.compile(
    r"AIza[\w-]{30,}|(hf|gsk|ghp|gho|r8)_[A-Za-z0-9]{16,}|github_pat_|xai-[A-Za-z0-9]{16,}"
    r"|bot\d+:[\w-]{16,}|(nvapi|pplx|csk)-[\w-]{16,}|(fw|tgp_v1)_[\w-]{16,}"
)
"""A URL host, path segment or query value of a known key form (Google's `AIza…`, Hugging Face's
`hf_…`, Groq's `gsk_…`, GitHub's, xAI's, Replicate's, a Telegram bot's `bot<id>:<token>`,
NVIDIA's `nvapi-…`, Perplexity's `pplx-…`, Cerebras' `csk-…`, Fireworks' `fw_…`, Together's
`tgp_v1_…`): a secret in the URL, written with the config (`sk-…` is a literal secret to the
config's own check)."""

IDNA_DEVIATIONS = frozenset("\u00df\u03c2")
"""Letters IDNA 2003 maps (`ß` to `ss`, the final `ς` to a medial sigma) and IDNA 2008
keeps: a host holding one names two hosts (the joiners, the other two, are no printable host
characters)."""

IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
"""Unicode's default-ignorable code points (a stable list): characters that draw nothing.
IDNA 2008 drops each from a host; IDNA 2003 keeps some (a Hangul filler, U+3164, a
variation selector past the 16th): `a\u3164b` is `ab` to one, `xn--ab-luk` to the other."""


def _idnas_disagree(host: str) -> bool:
    """Whether IDNA 2008 (UTS 46: NFKC, case-folded) names another host with `host` than
    Python's codec (IDNA 2003's nameprep) does: it holds a deviation, as written or
    lower-cased, or a letter the two map otherwise. Nameprep reads Unicode 3.2, where a later
    letter is unassigned and kept (`\U0001f130pi`, a squared `A`, is `api` to UTS 46), and
    lower-cases where UTS 46 case-folds (Cherokee folds to its capitals); or a character
    that draws nothing (`IGNORABLE`), which UTS 46 drops and nameprep may keep."""
    lowered = "".join(char.lower() for char in unicodedata.normalize("NFKC", host))
    if set(lowered) & IDNA_DEVIATIONS or IGNORABLE.search(host + lowered):
        return True
    for label in encodings.idna.dots.split(host):
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", label).casefold())
        try:  # an ASCII label goes as it is (its case is DNS's)
            if not label.isascii() and encodings.idna.nameprep(label) != folded:
                return True
        except UnicodeError:  # a letter nameprep refuses: no host it names
            return True
    return False


_HOST_NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""A host name as resolvers look it up, IDNA-encoded (`_`: a Docker service's name)."""
_NUMBER = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
"""A label that is a number (decimal, octal, hex), as an IPv4 address's parts are read."""


def _host_name(host: str) -> bool:
    """Whether `host` (urllib's, encodable) is an IP address or a host name (`_HOST_NAME`)
    not ending in a number (no top-level domain is one: such a host is an IPv4 address,
    which libc's resolver reads as `inet_aton` does, `127.1` too, or none: `256.1.1.1`)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        name = host.encode("idna").decode("ascii").rstrip(".")
        if _HOST_NAME.fullmatch(name) is None:
            return False
        if _NUMBER.fullmatch(name.rpartition(".")[2]):
            try:
                socket.inet_aton(name)
            except OSError:
                return False
    return True


_KEY_FORM = re.compile(rf"(?<![A-Za-z0-9])(?:{KEY_IN_PATH.pattern})")
"""A known key form starting anywhere a word may (`/v1/key=AIza…`, `x-gsk_…`), not only at a
segment's or a value's start."""


def _holds_key_form(text: str) -> bool:
    return _KEY_FORM.search(unquote(text)) is not None


MODEL_ROUTES = ("/chat/completions", "/completions", "/responses", "/messages")
"""The model calls' routes every client appends to `base_url`: no base ends in one."""


def _integral(value: Any) -> Any:
    # YAML reads `1.0e+20` as a float; as a count it must fail on the key's maximum, not on
    # pydantic's 64-bit parse limit ("unable to parse input string").
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


Count = Annotated[int, BeforeValidator(_integral)]
"""An integer count; a whole float such as `1e20` is checked against the count's maximum."""

AnswerRetries = Annotated[
    Count,
    Field(
        ge=0,
        le=MAX_ATTEMPTS,
        description="Fresh runs of a model role after a structured answer (an analysis, a "
        "review, a diagnosis) that cannot be read, each told the parse error "
        "(`answers.ask_until_read`); past them the protocol error counts. 0: the first "
        "malformed answer counts.",
    ),
]
"""The retry budget of structured answers, the same key in every algorithm that reads them."""


def _not_blank(value: Any) -> Any:
    """An empty path would read as `.`, the config's own folder, without a word: a key left
    empty by mistake (an unset variable in a template) must not pick a folder."""
    if isinstance(value, str) and not value.strip():
        raise ValueError("an empty path: give a path, or leave the key out")
    return value


def _resolve(path: Path, info: ValidationInfo) -> Path:
    base = (info.context or {}).get("base_dir") or Path.cwd()
    return (Path(base) / path.expanduser()).resolve()


def _must_be_dir(path: Path) -> Path:
    if not path.is_dir():
        raise ValueError(f"folder does not exist: {path}")
    return path


def _must_exist(path: Path) -> Path:
    if not path.exists():
        raise ValueError(f"path does not exist: {path}")
    return path


ResolvedPath = Annotated[Path, BeforeValidator(_not_blank), AfterValidator(_resolve)]
ExistingDir = Annotated[ResolvedPath, AfterValidator(_must_be_dir)]
ExistingPath = Annotated[ResolvedPath, AfterValidator(_must_exist)]


def _leaf_types(annotation: Any) -> set[Any]:
    """The types an annotation is made of (`int | None` -> {int, NoneType})."""
    args = get_args(annotation)
    if not args:
        return {annotation}
    return {leaf for arg in args for leaf in _leaf_types(arg)}


def _numeric(model: type[BaseModel], name: str) -> bool:
    """Whether the field takes a number and not a boolean."""
    kinds = _leaf_types(model.model_fields[name].annotation)
    return bool(kinds & {int, float}) and bool not in kinds


class Section(BaseModel):
    # Floats must be finite: an `.inf` timeout is no timeout, and `nan` compares false to all.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_number(cls, data: Any) -> Any:
        # YAML reads `true`, `yes`, `on` as booleans, and pydantic would take one for 1 at a
        # number's key (`max_steps: yes` ran one step): given as the word, it fails there.
        if not isinstance(data, dict):
            return data
        words = {
            key: str(value).lower()
            for key, value in data.items()
            if isinstance(value, bool) and key in cls.model_fields and _numeric(cls, key)
        }
        return {**data, **words} if words else data


class ReasoningConfig(Section):
    effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        None, description="OpenAI `reasoning_effort` / Responses `reasoning.effort`."
    )
    budget_tokens: Count | None = Field(
        None, gt=0, le=MAX_TOKENS, description="Anthropic extended-thinking budget in tokens."
    )


class PriceConfig(Section):
    """USD per million tokens; with it, usage records carry a cost."""

    # Bounded: at 1e308 one call cost `inf`, written as `Infinity` (not JSON) in the log.
    input_per_mtok: float = Field(ge=0, le=MAX_PRICE, description="USD per million input tokens.")
    output_per_mtok: float = Field(ge=0, le=MAX_PRICE, description="USD per million output tokens.")


class LLMConfig(Section):
    """How one role talks to its model. Each role has its own."""

    model: str = Field(min_length=1, description="Model id sent to the endpoint.")
    base_url: str | None = Field(
        None,
        description="OpenAI- or Anthropic-compatible endpoint URL; `offline` for the built-in "
        "offline model simulator; None for the SDK's default endpoint.",
    )
    api_key: SecretRef | None = Field(
        None, description="`${ENV_VAR}` reference to the key; resolved only when a call is made."
    )
    api: Literal["chat", "responses", "anthropic"] = Field(
        "chat", description="`chat` / `responses` (OpenAI-compatible) or `anthropic` (Messages)."
    )
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: Count | None = Field(
        None, gt=0, le=MAX_TOKENS, description="Cap on output tokens per call."
    )
    reasoning: ReasoningConfig | None = None
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra JSON fields merged into every request body; not the fields the "
        "framework or the model gateway owns (`model`, `messages`, `tools`, `stream`, …: "
        "`config/request_fields.py`).",
    )
    timeout: float = Field(
        120.0,
        ge=MIN_CALL_TIMEOUT,
        le=MAX_TIMEOUT,
        description="Seconds allowed for one model call.",
    )
    max_retries: Count = Field(
        2, ge=0, le=MAX_RETRIES, description="Retries of a failed call (429, 5xx, timeout)."
    )
    price: PriceConfig | None = Field(None, description="Token prices; None: cost not computed.")
    auth: Literal["key", "login"] = Field(
        "key",
        description="`key`: `api_key` (or none); `login`: the harness's native login "
        "credentials, read from where they live and only then (adapters that have one).",
    )

    @field_validator("model")
    @classmethod
    def _model_id(cls, value: str) -> str:
        # No endpoint has such an id: every call would be refused (404), each task an error.
        # A space inside is kept: a local server (and the simulator's scripts) may name one so.
        if value != value.strip() or not value.isprintable():
            raise ValueError(
                "a model id has no leading or trailing whitespace and no control characters, "
                f"got {value!r}"
            )
        return value

    @field_validator("base_url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is None or value == "offline":
            return value
        if not re.match(r"https?://", value, re.IGNORECASE):  # httpx reads `HTTPS://` too
            raise ValueError(
                "expected an http(s):// URL, `offline`, or nothing for the SDK default"
            )
        # Before anything echoes the URL: a credential in it would be printed, and written
        # with the config into the experiment's run_meta.json.
        if (problem := _credential_in_url(value)) is not None:
            raise ValueError(problem)
        if "@" in value.partition("?")[0]:
            # a user or password, which the gateway never sends (it connects by scheme, host
            # and port), and the config is written with the experiment: the URL is not
            # repeated. Before the port is read: a password holding `/` or a port typo
            # failed there, and that message quoted the URL, the password in it.
            raise ValueError(_USERINFO)
        # Every call would fail to connect: refused here, not task by task. Neither the URL
        # nor urllib's words are quoted: they repeat the part they could not read, a password
        # holding `?` (`user:pa?ss@`), a key pasted as the port or as a `[host]`.
        try:
            host, port = urlsplit(value).hostname, urlsplit(value).port
        except ValueError:
            raise ValueError(
                "an endpoint URL whose port is not a number or whose [host] is no IP address"
            ) from None
        if port == 0:
            raise ValueError("an endpoint URL with port 0, which no server listens on")
        if not host or not host.isprintable() or any(c.isspace() for c in host):
            raise ValueError("an http(s):// URL with no host, or whitespace in it")
        try:  # as every client sends and resolves it: `ll\u00e9m..x` failed each call
            host.encode("idna")
        except UnicodeError:
            raise ValueError(
                "an endpoint URL whose host no client can encode (an empty label, or a label "
                "past 63 characters)"
            ) from None
        if not _host_name(host):
            # `api.openai,com`, `%61`: urllib reads it, no resolver does (a browser decodes
            # the `%`, Python does not): every call failed, each an infrastructure fault
            raise ValueError(
                "an endpoint URL whose host is neither an IP address nor a name of letters, "
                "digits, `-`, `_` and dots (a `,`, a `%`, a `!`; `256.1.1.1`, five numbers), "
                "which no resolver looks up"
            )
        if _idnas_disagree(host):
            # Python's codec (IDNA 2003: the gateway's, Gate0's) writes `strasse`, IDNA 2008
            # (browsers, curl) `xn--strae-oqa`: the key went to a name no one meant
            raise ValueError(
                "an endpoint URL whose host holds `\u00df`, `\u03c2` or a letter IDNA 2003 and "
                "2008 map otherwise (2003 writes `ss` and a medial sigma, keeps a letter newer "
                "than Unicode 3.2, lower-cases Cherokee; 2008 keeps the first two, maps the "
                "new letter, folds Cherokee to capitals) or one that draws nothing (a Hangul "
                "filler, which 2008 drops), so calls and the key could go to another host: "
                "give the host in its xn-- form"
            )
        if _userinfo_after_query(value):
            raise ValueError(_USERINFO)
        after = urlsplit(value)._replace(scheme="", netloc="").geturl()
        if not after.isascii() or any(c.isspace() or not c.isprintable() for c in value):
            # no request line carries them: every call failed in the gateway (`InvalidURL`,
            # or `UnicodeEncodeError`, "the gateway's own error")
            raise ValueError(
                "an endpoint URL with whitespace, a control character or a letter that is not "
                "ASCII after its host, which no request line carries: percent-encode it "
                "(`%20`, `%C3%A9`)"
            )
        if urlsplit(value).path.rstrip("/").endswith(MODEL_ROUTES):
            # a provider's curl line pasted whole: every call went to `…/chat/completions/
            # chat/completions`, each a 404 relayed as the model's answer
            raise ValueError(
                "an endpoint URL ending in a model call's route (`/chat/completions`, "
                "`/responses`, `/messages`), which every client appends: give its base, "
                "e.g. https://api.openai.com/v1"
            )
        return value

    @field_validator("extra_body")
    @classmethod
    def _not_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        problems = owned_field_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        try:  # it goes into every request as JSON: a date, a set or `.nan` failed every call
            # UTF-8 too: a lone surrogate (YAML's "\ud800") is written as an escape that
            # endpoints refuse as not Unicode
            json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"every request carries it as JSON, and it is not Unicode text: {exc.reason} "
                f"({exc.object[exc.start : exc.end]!r})"
            ) from None
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"every request carries it as JSON, and it is not JSON: {exc}"
            ) from None
        return value

    @model_validator(mode="after")
    def _one_credential(self) -> LLMConfig:
        if self.auth == "login" and self.api_key is not None:
            raise ValueError(
                "auth: login uses the harness's native login credentials; remove api_key, or "
                "set auth: key"
            )
        return self


_USERINFO = (
    "an endpoint URL with a user or password (an `@`), which the gateway never sends; give "
    "the key as api_key: ${ENV_VAR}"
)


def _userinfo_after_query(url: str) -> bool:
    """Whether `url` reads as a user and password cut by a `?` (`user:?PASS@host`,
    `user?PASS@host`: urllib's host is `user`, the password in the query): an `@` in a query
    parameter's name, or after an empty port. An `@` in a value (`?deployment=team@eu`) is
    a query's own."""
    parts = urlsplit(url)
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    return any("@" in name for name in names) or ("@" in parts.query and parts.netloc.endswith(":"))


_PLAIN_NAME = re.compile(r"[A-Za-z_.-]{1,40}")
"""A query parameter's name of words alone: one holding a digit, a `=` or a `:` may hold a
secret itself (`?key%3D<secret>` decodes to the name `key=<secret>`, its value empty)."""


def _credential_in_url(url: str) -> str | None:
    """Why `url` may not name an endpoint because it carries a credential (never quoting
    it), or None. A query parameter named as a key or token is sent with every call, and
    the URL is written with the config; a fragment is never sent at all."""
    try:
        parts = urlsplit(url)
    except ValueError:  # read again, and refused without its words, by the caller
        return None
    # `;` separates parameters too, for many servers: in the query (`?v=1;key=...`) and in
    # the path (`/v1;key=...`, RFC 3986's path parameters)
    params = [*parts.query.split(";"), *parts.path.split(";")[1:]]
    for name, value in parse_qsl("&".join(params), keep_blank_values=True):
        # under an innocent name (`?project=AIza…`), or bare, a name with no value
        # (`?AIza…`, `/v1;hf_…`: the operator forgot `key=`)
        if _holds_key_form(value) or _holds_key_form(name):
            return (
                "an endpoint URL whose query or parameters hold a value of a known key form, "
                "which would be written with the config; give the key as api_key: ${ENV_VAR}"
            )
        name = unicodedata.normalize("NFKC", name)  # a full-width KEY reads as KEY
        words = {w for w in re.split(r"[^a-z0-9]+", name.lower()) if w}
        if len(value) < MIN_SECRET_LENGTH and _PLAIN_NAME.fullmatch(name):
            continue  # `?max_token=512`, `?auth=none`: no secret is this short (the mask's rule)
        if words & SECRET_QUERY_WORDS or name.lower().endswith(("key", "token")):
            # the word only: a name decoded from `key%3D<secret>` holds the secret itself
            word = min(words & SECRET_QUERY_WORDS or {"key" if "key" in name.lower() else "token"})
            return (
                f"an endpoint URL whose query parameter named with {word!r} holds a credential, "
                "which would be written with the config; give the key as api_key: ${ENV_VAR}"
            )
    if _holds_key_form(parts.netloc.rpartition("@")[2]):  # pasted as the host: as it is typed
        return (
            "an endpoint URL whose host holds a known key form, which would be written with "
            "the config; give the key as api_key: ${ENV_VAR}"
        )
    if any(_holds_key_form(segment) for segment in parts.path.split("/")):
        return (
            "an endpoint URL whose path holds a segment of a known key form, which would be "
            "written with the config; give the key as api_key: ${ENV_VAR}"
        )
    if parts.fragment or url.endswith("#"):
        return "an endpoint URL with a #fragment, which no HTTP client sends"
    return None


class SpendCap(Section):
    """A role's spending cap, enforced by the model gateway per experiment: once reached,
    further calls are refused (an infrastructure fault with the cap in its message)."""

    # Above 0: at 0 the gateway refuses the role's first call (an editing role makes no
    # edit, a target answers nothing), a whole experiment spent for nothing.
    usd: float | None = Field(None, gt=0, description="USD the role may spend; None: no cap.")
    tokens: int | None = Field(
        None, gt=0, description="Input + output tokens the role may use; None: no cap."
    )


class PermissionsConfig(Section):
    """What one role's agent may do, in the framework's words: each adapter maps it onto its
    harness's own tools and refuses (`config_problems`) what it cannot enforce. Budgets, the
    cancellation of a run and the completion checks apply whatever these say."""

    edit: bool = Field(
        True,
        description="May change files in its working folder; false: the folder is mounted "
        "read-only (a Worker must edit).",
    )
    shell: bool = Field(True, description="May run shell commands.")
    deny_tools: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list,
        description="The harness's own tool names the agent must not be offered.",
    )


MAX_WEB_BYTES = 16 << 20


class WebConfig(Section):
    """The role's web, through the model gateway only (the jail has no other network)."""

    enabled: bool = Field(
        False, description="Offer the agent a web fetch tool (adapters that have one)."
    )
    source: Literal["direct", "simulator"] = Field(
        "direct",
        description="`direct`: the gateway fetches public http(s) pages itself (loopback and "
        "private addresses refused); `simulator`: the role's endpoint, the offline "
        "simulator, serves deterministic pages (tests).",
    )
    max_bytes: Count = Field(
        1 << 20, gt=0, le=MAX_WEB_BYTES, description="Bytes of one page read at most."
    )
    timeout: float = Field(
        20.0, ge=MIN_CALL_TIMEOUT, le=MAX_TIMEOUT, description="Seconds for one fetch."
    )
    search_url: str | None = Field(
        None,
        description="`direct`: the search results page fetched for a search, `{query}` "
        "standing for the URL-encoded query (e.g. `https://html.duckduckgo.com/html/?q="
        "{query}`); None: no search (the simulator always has one).",
    )

    @field_validator("search_url")
    @classmethod
    def _search_page(cls, value: str | None) -> str | None:
        if value is None or (re.match(r"https?://", value) and "{query}" in value):
            return value
        raise ValueError("expected an http(s):// URL holding `{query}`")

    @property
    def searches(self) -> bool:
        """Whether the agent may search (a search page, or the simulator's)."""
        return self.enabled and (self.source == "simulator" or self.search_url is not None)


MODEL_FREE_TYPES = frozenset({"harbor-oracle", "harbor-nop"})
"""Adapters that call no model, so need no `llm` (Harbor's own `oracle` and `nop`)."""
NO_MODEL = "none"
"""Their `llm.model` when left out: a name no call is ever made with."""


class RoleConfig(Section):
    """An agent role: the target that runs tasks, or the Worker that edits harnesses."""

    type: str = Field(
        "miniagent",
        description="Adapter: a short name from the adapter registry or `package.module:Class`.",
    )
    source_dir: ExistingDir | None = Field(
        None, description="Harness folder (with components.yaml); None: the adapter's built-in."
    )
    llm: LLMConfig
    timeout: float = Field(
        600.0,
        gt=0,
        le=MAX_TIMEOUT,
        validate_default=True,  # the default must still outlast `llm.timeout`
        description="Wall-clock seconds for one run; more than `llm.timeout`.",
    )
    max_turns: Count | None = Field(
        50,
        ge=0,
        le=MAX_TURNS,
        description="Tool-using turns (model calls that may run tools) in one run: None, no "
        "count limit; 0, none (the model is asked only for its final answer); n, a hard stop "
        "after n, then the forced final answer.",
    )
    max_tool_calls: Count | None = Field(
        None,
        ge=0,
        le=MAX_TOOL_CALLS,
        description="Tool calls in one run: None, no count limit; 0, no tool may run (never "
        "read as unlimited); n, calls after the n-th are refused and the run must answer.",
    )
    permissions: PermissionsConfig = Field(
        default_factory=lambda: PermissionsConfig(),
        description="What the role's agent may do; each adapter enforces it or refuses it.",
    )
    spend_cap: SpendCap | None = Field(
        None, description="Caps on what this role may spend, enforced by the model gateway."
    )
    web: WebConfig = Field(
        default_factory=lambda: WebConfig(),
        description="The agent's web, through the model gateway; off by default.",
    )
    debug_llm_io: bool = Field(
        False,
        description="Keep the run's model requests and responses (redacted, bounded) in its "
        "trajectory's metadata; off: nothing extra is written.",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_model_for_harbors_own_agents(cls, data: Any) -> Any:
        # Harbor's oracle and nop call no model: their `llm` may be left out.
        if isinstance(data, dict) and data.get("type") in MODEL_FREE_TYPES and "llm" not in data:
            return {**data, "llm": {"model": NO_MODEL}}
        return data

    @field_validator("type")
    @classmethod
    def _adapter_type(cls, value: str) -> str:
        if not _ADAPTER_TYPE.fullmatch(value):
            raise ValueError(
                "expected an adapter name such as `miniagent` or `package.module:Class`"
            )
        return value

    @field_validator("timeout")
    @classmethod
    def _fits_a_model_call(cls, value: float, info: ValidationInfo) -> float:
        # `llm` is declared before `timeout`, so it is validated first; absent if it failed.
        llm = info.data.get("llm")
        if isinstance(llm, LLMConfig) and value <= llm.timeout:
            raise ValueError(
                f"expected more than this role's llm.timeout ({llm.timeout:g} s), got "
                f"{value:g} s: one model call must fit in a run; raise this timeout or lower "
                "llm.timeout"
            )
        return value


class WorkerRoleConfig(RoleConfig):
    """The Worker role: an agent that edits harness files, and which harness it edits with."""

    harness: Literal["fixed", "adopted"] = Field(
        "fixed",
        description="`fixed`: the Worker runs its own harness (`type`, `source_dir`) for the "
        "whole experiment. `adopted`: it runs the experiment's current adopted snapshot of "
        "the target's harness (the algorithm's own adoption rule), with this role's model, "
        "endpoint, caps and permissions, so each adopted harness takes part in making the "
        "next (seed 003); the target's adapter must have file tools.",
    )


class ForkSection(Section):
    """Where a forked experiment's seed comes from: a candidate of another experiment of the
    same home (`flashrsi fork`, the start job's `fork_from`, the nightly schedule)."""

    experiment: str = Field(description=f"The origin experiment's name ({NAME_RULE}).")
    candidate: str = Field(
        "baseline",
        description="The origin's candidate: `r<NNN>.<slot>` (e.g. `r002.c0`), a snapshot id "
        "(or a prefix of 7+ characters), `baseline` (its decision ledger's baseline, else its "
        "seed) or `seed`.",
    )
    snapshot: str | None = Field(
        None,
        description="The candidate's snapshot id, pinned when the fork is created (what the "
        "seed's tree is taken from); None: resolved then.",
    )
    eval_sets: Literal["same", "next"] = Field(
        "same",
        description="The origin's evaluation-set versions are inherited; `same`: tasks "
        "unchanged stay on their version (scores comparable with the origin's); `next`: every "
        "evaluation opens the next version (`dev/e2`, …), never compared with the origin's "
        "(the nightly schedule's).",
    )

    @field_validator("experiment")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        problem = name_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class ExperimentSection(Section):
    name: str = Field(description=f"Unique within the home folder; {NAME_RULE}.")
    home: ResolvedPath | None = Field(
        None, validate_default=True, description="Folder of experiments; default ./.flashrsi."
    )
    seed: int = Field(0, description="Seed for everything the experiment randomises.")
    confinement: Literal["bwrap", "none"] = Field(
        "bwrap",
        description="`bwrap`: every agent process runs in a bubblewrap jail behind the model "
        "gateway; `none`: unconfined (recorded, and every summary marks the experiment).",
    )
    control: str | None = Field(
        None,
        description="An experiment of the same home this one is measured against (a "
        "budget-matched `best_of_n`): the summary reports the lift over it, paired per task. "
        "Not part of the experiment's identity: a control may be named after it ran.",
    )
    fork: ForkSection | None = Field(
        None,
        description="Start from a candidate of another experiment instead of the target's "
        "harness: its tree becomes the seed, the lineage is recorded, its evaluation sets are "
        "inherited, and its sealed test may not reach this one's train or dev.",
    )

    @field_validator("name", "control")
    @classmethod
    def _safe_name(cls, value: str | None) -> str | None:
        problem = None if value is None else name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("home", mode="before")
    @classmethod
    def _default_home(cls, value: Any) -> Any:
        # The default lives where the user runs the command, not beside the YAML file.
        if isinstance(value, str) and not value.strip():  # it would be the config's folder
            raise ValueError("an empty path; leave the key out for ./.flashrsi")
        return Path.cwd() / ".flashrsi" if value is None else value

    @property
    def dir(self) -> Path:
        assert self.home is not None
        return self.home / self.name


class SplitCounts(Section):
    train: Count = Field(ge=0, le=MAX_TASKS)
    dev: Count = Field(ge=0, le=MAX_TASKS)
    test: Count = Field(ge=0, le=MAX_TASKS)


class BenchmarkConfig(Section):
    name: Literal["text_classification", "terminal_bench", "swe_bench"]
    data_path: ExistingPath | None = Field(
        None, description="Task data file or folder; None: the benchmark's built-in data."
    )
    split_counts: SplitCounts | None = Field(
        None, description="Tasks drawn into each split; None: the benchmark's documented default."
    )
    limit: Count | None = Field(
        None, ge=1, le=MAX_TASKS, description="Use at most this many tasks per split."
    )
    seed: int = Field(0, description="Seed of the deterministic split draw.")
    tasks_dir: ExistingDir | None = Field(
        None, description="terminal_bench: a folder of Harbor task folders; None: built-in suite."
    )
    harbor_environment: str = Field(
        "local",
        description="terminal_bench: `local` (no Docker needed), `docker`, `docker-offline` "
        "(Harbor's docker environment built on the host's network, run on none: no registry "
        "or bridge needed), or a Harbor environment class as `package.module:Class`.",
    )
    swe_bench_grading: Literal["local", "docker"] = Field(
        "local",
        description="swe_bench: where a patch's tests run: `local` (this machine's Python, "
        "jailed; for repositories needing only pytest) or `docker` (the instance's image, built "
        "here, by the swebench harness's own `run_instance`; needs a Docker engine).",
    )
    evolution_data_path: ExistingPath | None = Field(
        None,
        description="Tasks that replace train (same format as data_path); must not "
        "overlap dev/test by id, instruction or checksum.",
    )
    evolution_limit: Count | None = Field(
        None, ge=1, le=MAX_TASKS, description="Use at most this many."
    )
    attempts: Count = Field(1, ge=1, le=MAX_ATTEMPTS, description="Rollouts per task (K).")
    concurrency: Count = Field(
        4, ge=1, le=MAX_CONCURRENCY, description="Rollouts run at the same time."
    )
    max_infra_reruns: Count = Field(
        2,
        ge=0,
        le=MAX_RETRIES,
        description="Reruns of an infrastructure failure before it scores 0.",
    )

    @model_validator(mode="after")
    def _grading_of_swe_bench_only(self) -> BenchmarkConfig:
        if self.swe_bench_grading != "local" and self.name != "swe_bench":
            raise ValueError(
                f"swe_bench_grading: {self.swe_bench_grading!r} grades SWE-bench patches; "
                f"this benchmark is {self.name!r} (remove the key)"
            )
        return self
