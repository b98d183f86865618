"""Reading an operator's or a project's configuration file as text: UTF-8, a leading byte-order
mark dropped (Windows editors write one), and each failure one error naming the file and what to
do. The byte that is not UTF-8 is named by its offset only: the text around it may be a secret (a
token file)."""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigurationError

__all__ = ["read_text_file"]


def read_text_file(
    path: Path, what: str, *, error: type[Exception] = ConfigurationError, hint: str = ""
) -> str:
    """The text of ``path``, ``what`` it is (``"the MCP configuration"``) naming it in the
    ``error`` raised when it cannot be read (then ``hint`` says what to check) or is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} {path} is not valid UTF-8 (byte offset {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise error(
            f"cannot read {what} {path}: {reason}" + (f"; {hint}" if hint else "")
        ) from None
