"""One error tree (issue 55): every error mor raises on purpose descends from one of the eight
families under MorError (mor/errors.py), so a caller can catch by what to do about it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import mor
from mor.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    CommitError,
    CorruptMetadataError,
    MorError,
    NotFoundError,
    StorageError,
    UnsupportedFeatureError,
    ValidationError,
)

FAMILIES = (
    NotFoundError,
    AlreadyExistsError,
    ValidationError,
    CommitError,
    CorruptMetadataError,
    StorageError,
    AccessDeniedError,
    UnsupportedFeatureError,
)
OPTIONAL = ("mor.spark", "mor.server", "mor.cli")  # their engines may be missing on a machine


def every_module() -> None:
    """Import every module of mor, so that every error class is defined."""
    for info in pkgutil.walk_packages(mor.__path__, "mor."):
        if info.name.endswith("__main__"):  # runs the CLI
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            if not info.name.startswith(OPTIONAL):
                raise


def subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | subclasses(sub)
    return found


def test_the_families_are_the_children_of_mor_error() -> None:
    every_module()
    assert {c for c in MorError.__subclasses__() if c.__module__.startswith("mor.")} == set(FAMILIES)


def test_every_error_has_a_family() -> None:
    every_module()
    orphans = [c for c in subclasses(MorError) if c.__module__.startswith("mor.") and not issubclass(c, FAMILIES)]
    assert orphans == []


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_each_family_is_exported(family: type) -> None:
    assert getattr(mor, family.__name__) is family


def test_a_family_catches_its_members_and_the_old_parents_still_do() -> None:
    with pytest.raises(AlreadyExistsError):
        raise mor.RefAlreadyExistsError("a branch of that name exists")
    with pytest.raises(ValueError):  # an InvalidArgumentError, as before
        raise mor.RefAlreadyExistsError("a branch of that name exists")
    with pytest.raises(NotFoundError):
        raise mor.MetadataFileNotFoundError("no metadata file")
    with pytest.raises(OSError):  # a StorageError too
        raise mor.MetadataFileNotFoundError("no metadata file")
