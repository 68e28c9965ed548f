"""Secrets live in the environment; configs hold only `${ENV_VAR}` references to them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class MissingSecretError(LookupError):
    """A referenced environment variable is not set at the moment it is needed."""


class SecretRef(str):
    """A reference such as `${OPENAI_API_KEY}`; the value is read only by `resolve()`."""

    __slots__ = ()

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls.parse, core_schema.str_schema(), serialization=core_schema.to_string_ser_schema()
        )

    @classmethod
    def parse(cls, value: str) -> SecretRef:
        if not _REFERENCE.fullmatch(value.strip()):
            # Never echo the value: it is probably the secret itself.
            raise ValueError(
                "a literal secret is not allowed in a config; export it as an environment "
                "variable and write its reference instead, e.g. ${OPENAI_API_KEY}"
            )
        return cls(value.strip())

    @property
    def env_var(self) -> str:
        return self[2:-1]

    def resolve(self, environ: Mapping[str, str] | None = None) -> str:
        environ = os.environ if environ is None else environ
        try:
            return environ[self.env_var]
        except KeyError:
            raise MissingSecretError(
                f"environment variable {self.env_var} is not set (referenced as {self})"
            ) from None


def is_reference(text: str) -> bool:
    return bool(_REFERENCE.fullmatch(text.strip()))
