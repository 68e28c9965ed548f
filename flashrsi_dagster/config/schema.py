"""Walking the config models by key path: what a key holds, which keys are valid, closest names."""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from flashrsi_dagster.config.secrets import SecretRef

UNKNOWN = object()


def unwrap(annotation: Any) -> Any:
    """Strip `Annotated[...]` and `| None`; a union of several types is returned as is."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def models_in(annotation: Any) -> list[type[BaseModel]]:
    annotation = unwrap(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in models_in(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def child(annotation: Any, key: str | int) -> Any:
    """The annotation of `key` inside a value of type `annotation`, or `UNKNOWN`."""
    annotation = unwrap(annotation)
    if annotation is Any:
        return Any
    origin = get_origin(annotation)
    if origin in (dict, Mapping):
        return get_args(annotation)[1] if get_args(annotation) else Any
    if origin in (list, Sequence) and isinstance(key, int):
        return get_args(annotation)[0] if get_args(annotation) else Any
    for model in models_in(annotation):
        if key in model.model_fields:
            return model.model_fields[key].annotation
    return UNKNOWN


def narrow(annotation: Any, value: Any) -> Any:
    """The member of a union of models that `value` (a mapping) picks with a literal field
    such as `name: modular_rsi`; the annotation as is when it is no such union or none fits."""
    models = models_in(annotation)
    if len(models) < 2 or not isinstance(value, Mapping):
        return annotation
    for model in models:
        for key, field in model.model_fields.items():
            if get_origin(field.annotation) is Literal and value.get(key) in get_args(
                field.annotation
            ):
                return model
    return annotation


def member(annotation: Any, tag: Any) -> Any:
    """The member of a union of models that a pydantic error location's `tag` names (its
    class name or its discriminating literal); the annotation as is otherwise."""
    for model in models_in(annotation):
        if tag == model.__name__ or any(
            get_origin(field.annotation) is Literal and tag in get_args(field.annotation)
            for field in model.model_fields.values()
        ):
            return model
    return annotation


def literal_values(annotation: Any, key: str) -> list[str]:
    """The values a union's members allow for their literal field `key` (`algorithm.name`)."""
    return [
        str(arg)
        for model in models_in(annotation)
        if key in model.model_fields
        and get_origin(field := model.model_fields[key].annotation) is Literal
        for arg in get_args(field)
    ]


def union_tags(annotation: Any) -> set[str]:
    """Names pydantic puts into error locations for the members of a union of models."""
    models = models_in(annotation)
    if len(models) < 2:
        return set()
    tags = {model.__name__ for model in models}
    for model in models:
        for field in model.model_fields.values():
            if get_origin(field.annotation) is Literal:
                tags.update(str(arg) for arg in get_args(field.annotation))
    return tags


def valid_keys(annotation: Any) -> list[str]:
    return [name for model in models_in(annotation) for name in model.model_fields]


def closest(name: str, candidates: Sequence[str]) -> str | None:
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.5)
    return matches[0] if matches else None


def unknown_key_message(name: str, candidates: Sequence[str]) -> str:
    guess = closest(name, candidates)
    if guess is not None:
        return f"unknown key {name!r}; did you mean {guess!r}?"
    return f"unknown key {name!r}; valid keys here: {', '.join(candidates) or 'none'}"


def is_textual(annotation: Any) -> bool:
    """True for fields whose command-line value must stay a string (not be parsed as YAML)."""
    annotation = unwrap(annotation)
    if annotation in (str, SecretRef, Path):
        return True
    if get_origin(annotation) is Literal:
        return all(isinstance(arg, str) for arg in get_args(annotation))
    return False


def is_path(annotation: Any) -> bool:
    return unwrap(annotation) is Path
