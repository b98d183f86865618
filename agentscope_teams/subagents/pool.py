"""``specs_from``: the one way every subsystem turns a ``specs=`` argument into specs by name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import ConfigurationError
from .spec import SpecLoadResult, SubagentSpec, load_specs


def specs_from(
    specs: object, *, model_aliases: Mapping[str, str] | None = None
) -> dict[str, SubagentSpec]:
    """Specs by name from a directory, a :class:`SpecLoadResult`, one spec, or a list or mapping.

    ``None`` gives no specs. Two specs with one name, an entry that is not a spec, or a mapping
    key that is not its spec's name raise ``ConfigurationError``.
    """
    if specs is None:
        return {}
    if isinstance(specs, str | Path):
        return dict(load_specs(specs, model_aliases=model_aliases).specs)
    if isinstance(specs, SpecLoadResult):
        return dict(specs.specs)
    if isinstance(specs, SubagentSpec):
        return {specs.name: specs}
    if isinstance(specs, Mapping):
        for key, spec in specs.items():
            _check_entry(spec, repr(key))
            if key != spec.name:  # runs record the spec's name: continuing one looks it up
                raise ConfigurationError(
                    f"specs[{key!r}] is the spec named {spec.name!r}; key each spec by its name"
                )
        return dict(specs)
    if isinstance(specs, Iterable):
        found: dict[str, SubagentSpec] = {}
        for index, spec in enumerate(specs):
            _check_entry(spec, str(index))
            if spec.name in found:
                raise ConfigurationError(f"two subagent specs are named {spec.name!r}; rename one")
            found[spec.name] = spec
        return found
    raise ConfigurationError(
        "specs must be a directory, a SubagentSpec, a list or a mapping of them, got "
        f"{type(specs).__name__}"
    )


def _check_entry(spec: object, where: str) -> None:
    """A ConfigurationError unless ``spec`` (``specs[where]``) is a :class:`SubagentSpec`."""
    if not isinstance(spec, SubagentSpec):
        raise ConfigurationError(
            f"specs[{where}] is a {type(spec).__name__}, not a SubagentSpec: pass a directory "
            "as specs=, or load a file with SubagentSpec.from_file(path)"
        )
