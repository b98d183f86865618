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

    ``None`` gives no specs. Two specs with one name raise ``ConfigurationError``.
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
        return {str(k): v for k, v in specs.items()}
    if isinstance(specs, Iterable):
        found: dict[str, SubagentSpec] = {}
        for spec in specs:
            if spec.name in found:
                raise ConfigurationError(f"two subagent specs are named {spec.name!r}; rename one")
            found[spec.name] = spec
        return found
    raise ConfigurationError(
        "specs must be a directory, a SubagentSpec, a list or a mapping of them, got "
        f"{type(specs).__name__}"
    )
