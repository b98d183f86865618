"""How a command ends: its exit code and, on failure, one line on stderr.

Exit codes:

- 0: success.
- 1: the command failed; one ``error: ...`` line on stderr. Any exception counts, not only the
  library's own: one that is not an expected kind of error is named with its type and a hint to
  rerun with ``--debug``, which adds the full traceback above the line.
- 2: a usage error (argparse prints the usage and the problem).
- 130: interrupted (Ctrl-C); ``interrupted`` on stderr.
- 141: stdout was closed by its reader (``agentscope-teams ... | head -1``). The command stops
  quietly, with nothing on stderr, and exits as a process killed by SIGPIPE reports to the shell
  (128 + 13), like ``cat`` or ``grep``: the output was cut short, so it is not a success.

:func:`guarded_stdout` marks a write to a closed stdout as :class:`StdoutClosed`, so a broken
connection to a store or a model (also a ``BrokenPipeError``) is still reported as an error.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from ..errors import AgentScopeTeamsError, field_path
from .extras import missing_module_message
from .safe_text import terminal_safe

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_STDOUT_CLOSED = 141

#: The width of output to a pipe: wide enough that no table cell wraps.
PIPE_WIDTH = 10_000

#: Errors whose message is enough; any other exception is also named by its type.
REPORTED_ERRORS = (AgentScopeTeamsError, ValueError, KeyError, OSError)


class StdoutClosed(BrokenPipeError):
    """The reader of stdout went away (``| head``): the command stops quietly."""


class GuardedStdout:
    """stdout as it was, except that a broken pipe on it raises :class:`StdoutClosed` and is
    remembered in :attr:`closed` (some writers swallow the error: argparse's help, for one)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        try:
            written: int = self._stream.write(text)
        except BrokenPipeError as exc:
            raise self._closed(exc) from None
        return written

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError as exc:
            raise self._closed(exc) from None

    def _closed(self, exc: BrokenPipeError) -> StdoutClosed:
        self.closed_by_reader = True
        return StdoutClosed(*exc.args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class SafeConsole(Console):
    """A rich console for text read from a store: markup off unless asked for (an id ``[red]x``
    prints as written) and every text it renders passed through
    :func:`~.safe_text.terminal_safe` (newlines kept), so no escape sequence, stray carriage
    return or bidirectional override reaches the terminal, whichever view forgot to escape."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(**kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not segment.text:
                yield segment  # rich's own cursor and screen controls
            else:
                yield Segment(terminal_safe(segment.text, multiline=True), segment.style)


class OutputConsole(SafeConsole):
    """A rich console on stdout whose closed pipe raises :class:`StdoutClosed` (rich's default
    raises ``SystemExit(1)``), so every command stops the same way.

    Piped (not a terminal) and without ``$COLUMNS``, lines are as wide as their content
    (:data:`PIPE_WIDTH`): an id is never folded at 80 columns for the program reading it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if "width" not in kwargs and not self.is_terminal and not os.environ.get("COLUMNS"):
            self.width = PIPE_WIDTH

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise StdoutClosed("stdout was closed by its reader")


@contextmanager
def guarded_stdout() -> Iterator[GuardedStdout]:
    """Within the block, writes to a closed stdout raise :class:`StdoutClosed`."""
    original = sys.stdout
    guard = GuardedStdout(original)
    sys.stdout = guard
    try:
        yield guard
    finally:
        sys.stdout = original


def stdout_closed() -> int:
    """The exit code of a command whose stdout was closed; stdout now goes to /dev/null."""
    _silence_stdout()
    return EXIT_STDOUT_CLOSED


def failure(exc: BaseException, debug: bool, command: str | None = None) -> int:
    """Report ``exc`` (one line, or nothing for a closed stdout) and return the exit code.

    A missing optional module (``ModuleNotFoundError``) is told with the extra that installs it
    (:mod:`.extras`); ``command`` names the command in that line."""
    leaves = error_leaves(exc)
    if any(_stdout_closed(leaf) for leaf in leaves):
        return stdout_closed()
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        print_error(Text("interrupted", style="yellow"))
        return EXIT_INTERRUPTED
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    first = leaves[0]
    message = error_message(first)
    if isinstance(first, ModuleNotFoundError) and not isinstance(first, AgentScopeTeamsError):
        message = missing_module_message(first, command)
    elif not isinstance(first, REPORTED_ERRORS):
        message = (
            f"unexpected {type(first).__name__}: {message} (rerun with --debug for the traceback)"
        )
    if len(leaves) > 1:
        message += f" (and {len(leaves) - 1} more; --debug shows all)"
    print_error(Text("error: ", style="bold red").append(message))
    return EXIT_FAILED


def error_message(exc: BaseException) -> str:
    """The exception's message on one line (``KeyError`` without its quotes), with the ids in it
    made safe for the terminal (:func:`~.safe_text.terminal_safe`)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        text = exc.args[0]
    elif isinstance(exc, ValidationError):  # its problems, without pydantic's types and links
        text = f"invalid {exc.title}: " + "; ".join(map(_problem, exc.errors()))
    else:
        text = str(exc)
    joined = ""
    for line in (line.strip() for line in text.splitlines()):
        if line:  # a line ending in ':' introduces the next: no '; ' after it
            joined += ("" if not joined else " " if joined.endswith(":") else "; ") + line
    return terminal_safe(joined) or type(exc).__name__


def _problem(error: Any) -> str:
    """One validation problem: its message, after its field unless the message names it."""
    message = str(error["msg"]).removeprefix("Value error, ")
    where = field_path(error)
    return (
        message if not where or message.startswith(where.rsplit(".")[-1]) else f"{where}: {message}"
    )


def print_error(text: Text) -> None:
    SafeConsole(stderr=True, soft_wrap=True, highlight=False).print(text)


def error_leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order; ``exc`` itself if not a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in error_leaves(inner)] or [exc]
    return [exc]


def _stdout_closed(exc: BaseException) -> bool:
    """``exc`` is, or was raised while handling, a write to a closed stdout."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, StdoutClosed):
            return True
        if isinstance(cur, BaseExceptionGroup) and any(_stdout_closed(e) for e in cur.exceptions):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file (a test's capture): nothing to flush there
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
