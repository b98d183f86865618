"""The cost of a model response that no budget priced, so every session shows what it cost.

A call under a budget is priced by :mod:`agentscope_teams.usage` with the governor's price book.
Any other response whose provider reported tokens is priced here with the default
:class:`~agentscope_teams.usage.prices.PriceBook` (the ``genai-prices`` database, extra
``prices``): the dashboard's cost column is then filled for every model the database knows, not
only under a budget. An unknown model (or no database) leaves ``cost_usd`` None: unknown, not 0.
"""

from __future__ import annotations

from ..model.base import ChatModel, ModelResponse
from ..usage.prices import PriceBook

#: The price book of responses no budget priced (each model looked up once).
PRICES = PriceBook()


def price_unpriced(model: ChatModel, response: ModelResponse) -> None:
    """Set ``response.cost_usd`` from its reported tokens if nothing priced it yet."""
    used = response.usage
    if response.cost_usd is not None or response.usage_estimated:
        return
    if used.input_tokens == 0 and used.output_tokens == 0:
        return
    provider = str(getattr(model, "provider", ""))
    nanos = PRICES.nanos(provider, model.model_name, used.input_tokens, used.output_tokens)
    if nanos is not None:
        response.cost_usd = nanos / 1e9
