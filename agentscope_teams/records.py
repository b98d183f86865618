"""Records read across releases: a newer release may add a field that an older one does not know.

Two kinds of models are stored:

- :class:`StoredRecord`: written only by our code (a run record, a review record, a permission
  rule in a state). Unknown fields are kept (``extra="allow"``): an older release reads the record
  of a newer one, and what it writes back (a compare-and-set update) still holds them.
- :class:`InputRecord`: also written by people (a session's config and origin, a budget), where an
  unknown field is a typo to refuse with a clear error. It is refused unless the data is read back
  from the store: readers validate with ``context=FROM_STORE``, which keeps unknown fields as a
  :class:`StoredRecord` does (the context reaches nested models too).

Models only people write (specs, settings, tool arguments from a model) keep ``extra="forbid"``.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = ["FROM_STORE", "InputRecord", "StoredRecord", "from_store"]

FROM_STORE: dict[str, Any] = {"from_store": True}
"""The validation context of data read back from the store (``model_validate(..., context=)``)."""


def from_store(info: ValidationInfo) -> bool:
    """Whether the data being validated was read back from the store (:data:`FROM_STORE`)."""
    return isinstance(info.context, dict) and bool(info.context.get("from_store"))


class StoredRecord(BaseModel):
    """A record only our code writes: unknown fields (a newer release's) are kept."""

    model_config = ConfigDict(extra="allow")


class InputRecord(BaseModel):
    """A model people write that is also stored: an unknown field is an error, except in data
    read back from the store (:data:`FROM_STORE`), where it is kept."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="wrap")
    @classmethod
    def _no_unknown_fields(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        model = handler(data)
        unknown = model.__pydantic_extra__
        # an instance was checked when it was made; stored data keeps a newer release's fields
        if not unknown or isinstance(data, InputRecord) or from_store(info):
            return model
        raise PydanticCustomError(
            "extra_forbidden",
            "{model} has no field {names}; check the spelling (known fields: {known})",
            {
                "model": cls.__name__,
                "names": ", ".join(map(repr, unknown)),
                "known": ", ".join(cls.model_fields),
            },
        )
