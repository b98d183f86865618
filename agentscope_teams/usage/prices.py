"""What a call costs: a price per model from the caller's overrides, else from the ``genai-prices``
database (an optional dependency, ``pip install agentscope-teams[prices]``), else unknown."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigurationError


class Price(BaseModel):
    """US dollars per million input and output tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class PriceBook:
    """Prices by model id (``"gpt-4o"``) or ``"provider:model"``; the overrides win. A model's
    price is looked up in the database once (a lookup costs about a millisecond) and kept."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self.overrides = dict(overrides or {})
        self._found: dict[tuple[str, str], Price | None] = {}

    def price(self, provider: str, model: str) -> Price | None:
        """The price of ``model``: an override, else the database's (None: unknown)."""
        price = self.overrides.get(f"{provider}:{model}") or self.overrides.get(model)
        if price is not None:
            return price
        key = (provider, model)
        if key not in self._found:
            self._found[key] = _database_price(provider, model)
        return self._found[key]

    def nanos(self, provider: str, model: str, input_tokens: int, output_tokens: int) -> int | None:
        """The cost in nano-dollars, or None when no price is known for the model."""
        price = self.price(provider, model)
        return None if price is None else cost(price, input_tokens, output_tokens)

    def require(self, provider: str, model: str, input_tokens: int, output_tokens: int) -> int:
        """:meth:`nanos`, or a ConfigurationError naming the model when a dollar budget needs it."""
        found = self.nanos(provider, model, input_tokens, output_tokens)
        if found is None:
            raise ConfigurationError(
                f"no price is known for model {model!r} of provider {provider!r}, and a dollar "
                "budget applies: install the 'prices' extra (genai-prices) or pass "
                f"prices={{{model!r}: Price(input_per_mtok=..., output_per_mtok=...)}}"
            )
        return found


def cost(price: Price, input_tokens: int, output_tokens: int) -> int:
    """What ``input_tokens`` and ``output_tokens`` cost at ``price``, in nano-dollars."""
    usd = input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok
    return round(usd * 1000)  # per million tokens -> nano-dollars per token: x 1e9 / 1e6


def _database_price(provider: str, model: str) -> Price | None:
    """The database's price per million input and output tokens (its base tier)."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None

    def per_mtok(input_tokens: int, output_tokens: int) -> float | None:
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        for provider_id in (provider, None) if provider else (None,):
            try:
                found = calc_price(usage, model_ref=model, provider_id=provider_id)
            except LookupError:
                continue
            return float(found.total_price)
        return None

    found_in, found_out = per_mtok(1_000_000, 0), per_mtok(0, 1_000_000)
    if found_in is None or found_out is None:
        return None
    return Price(input_per_mtok=found_in, output_per_mtok=found_out)
