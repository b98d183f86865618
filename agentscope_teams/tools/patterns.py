"""Regular expressions a model writes (``grep_files``'s ``pattern``, ``bash_output``'s
``filter``), compiled and run with a time bound: the one home for both.

The syntax is Python's ``re`` (the third-party ``regex`` module in its ``re``-compatible default
mode). A pattern that backtracks catastrophically, such as ``(a|aa)+$`` against a long line of
``a``, would otherwise run for minutes; here a call's searches together get
:data:`PATTERN_SECONDS`, and past that the call ends with a :class:`~agentscope_teams.errors.ToolError`
the model can read, naming the pattern and where it was running. ``regex`` releases the GIL while
it matches a ``str``, so a search run in a worker thread (``anyio.to_thread``, as sync tools are
run) leaves the event loop, and every other session of the process, running meanwhile.
"""

from __future__ import annotations

import time

import regex

from ..errors import ToolError

__all__ = ["PATTERN_SECONDS", "BoundedPattern"]

PATTERN_SECONDS = 5.0
"""Matching time one tool call's pattern may spend in all (reading files is not counted)."""


class BoundedPattern:
    """A model's pattern, compiled; :meth:`search` spends at most :data:`PATTERN_SECONDS` in all.

    ``what`` names it in the error for a pattern that does not compile. Make one per tool call:
    the time budget is shared by every search of the instance. Blocking: call it from a worker
    thread, never on the event loop.
    """

    def __init__(self, pattern: str, *, what: str = "regular expression") -> None:
        try:
            self._compiled = regex.compile(pattern)
        except regex.error as exc:
            raise ToolError(f"invalid {what} {pattern!r}: {exc}") from None
        self.pattern = pattern
        self.seconds = PATTERN_SECONDS
        self._spent = 0.0

    def search(self, text: str, *, where: str) -> bool:
        """Whether the pattern matches somewhere in ``text`` (``where`` names it in the error:
        a file, a shell's output); a ToolError once the call's budget is spent."""
        left = self.seconds - self._spent
        started = time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self._compiled.search(text, timeout=left, concurrent=True) is not None
        except TimeoutError:
            raise ToolError(
                f"the pattern {self.pattern!r} took longer than {self.seconds:g} s on {where}; "
                "simplify it (a repetition of alternatives that overlap, such as (a|aa)+, can take "
                "exponential time) or search less text"
            ) from None
        finally:
            self._spent += time.monotonic() - started
