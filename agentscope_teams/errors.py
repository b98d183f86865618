"""The exception tree of agentscope-teams.

Every error the library raises on purpose derives from :class:`AgentScopeTeamsError`::

    AgentScopeTeamsError
    ├── ConfigurationError            a setup that cannot work (bad URL, missing extra, replicas on a local store)
    │   ├── MissingDependencyError    an optional driver is not installed; names the extra to install
    │   └── OptionError               an unknown or mistyped constructor option (option, suggestion)
    ├── StoreError                    the store could not do what was asked
    │   ├── VersionConflict           a conditional write lost (key, expected and found version)
    │   │   └── LeaseLostError        a fenced write: the lease no longer names this holder (lease_key)
    │   ├── ValueTooLargeError        a value over the configured limit; nothing was written
    │   ├── StoreUnavailableError     the server behind a store URL cannot be reached (password redacted)
    │   │   └── StoreBusyError        every pooled connection stayed in use past the wait (retryable)
    │   └── SchemaVersionError        a persisted record is newer than this code understands
    ├── LimitError                    a number or text outside its documented bounds (field, limit)
    ├── EventIdError                  a ``Last-Event-ID`` this server never sent (malformed, too long)
    ├── SessionBusyError              another caller holds the session lease past the wait timeout
    ├── SpecError                     a subagent spec file is invalid (file, line, reason)
    │   └── SpecErrors                several spec problems at once (``errors``)
    ├── SubagentError                 a subagent run could not finish
    │   ├── ChildPausedError          the subagent asked for a confirmation nobody can give
    │   └── GitError                  a git command of ``isolation: worktree`` failed or hung
    ├── TeamError                     a task board or mailbox rule was broken
    │   ├── ClaimConflict             somebody else holds (or just won) the task
    │   ├── TaskStateError            the transition is not allowed from the task's status
    │   ├── NotTaskOwnerError         only the owner may complete, fail or release a task
    │   ├── UnknownMemberError        no such member in the team
    │   ├── UnknownTeamError          no such team in the caller's (org, user) scope
    │   ├── UnknownTaskError          no such task on the team's board
    │   └── TaskBlockedError          a TaskCreated hook refused the task: nothing was created
    ├── ToolError                     raised inside a tool: returned to the model as an error result
    │   └── WebAccessError            web_fetch / web_search refused or failed (url, reason, status)
    ├── HITLError                     a confirmation that does not match the paused reply
    ├── OutputError                   structured output (``output_type=``, spec ``output:``, task data)
    │   ├── OutputValidationError     a value does not match its schema (problems with field paths)
    │   ├── OutputRetriesExceededError  the model gave no valid output within the retry limit
    │   └── OutputTypeMismatchError   a paused reply is resumed with a type whose schema differs
    ├── SyncCallInsideLoopError       a blocking ``*_sync`` call made while an event loop runs
    ├── CannotConvert                 an AgentScope session holds what this project cannot represent
    ├── CommandError                  a CLI command could not do what was asked
    ├── ControlPlaneError             the control plane answered an unexpected status, or is unreachable
    │   └── ControlPlaneAuthError     401/403: a missing, unknown or expired token, or out of scope
    ├── UsageLimitError               a budget or a shared rate limit stopped a model call
    │   ├── BudgetExceededError       a token/cost budget is spent (budget, limit, used, over)
    │   └── RateLimitWaitError        no turn of a shared rate limit within the wait bound (waited)
    └── ModelError                    a chat model call failed (see :mod:`agentscope_teams.model`)
        ├── ModelConfigurationError   no API key / base URL; names the environment variable
        ├── AuthenticationError       401/403: the key is invalid or expired
        ├── RateLimitError            429 after all retries
        ├── ModelServerError          5xx after all retries
        ├── ModelConnectionError      the endpoint cannot be reached (names the base URL)
        ├── ModelTimeoutError         the request timed out
        └── ModelResponseError        the response is malformed (no choices, invalid JSON, ...)

Errors carry their context as fields so callers never parse messages: ``VersionConflict`` (key,
expected, found), ``ClaimConflict`` (task_id, owner), ``SpecError`` (file, line, reason),
``LimitError`` (field, limit), ``TaskBlockedError`` (title, reason, hooks), ``OutputValidationError`` (output_name, problems),
``OutputRetriesExceededError`` (output_name, attempts, problems, reply_id), ``ControlPlaneError``
(status), ``WebAccessError`` (url, reason, status) and every ``ModelError`` (status_code, code,
body, model, base_url).

A store error's message is for the operator: it may name where the store is (URL without the
password, host, user, database) and quote the driver. Whatever shows an error to anyone else (an
HTTP answer, a model's tool result) shows :func:`public_message`, which is the message without them.

Some classes keep a standard base beside the tree, so code that caught them before still does:
``MissingDependencyError`` is an ``ImportError``, ``OptionError`` a ``TypeError``,
``CannotConvert`` a ``ValueError``. A few modules keep a private signal class outside the tree
(a retry request, a timeout inside a parser, a pydantic validator's ``ValueError``): each is
caught in the package and never reaches a caller; ``tests/test_public_api.py`` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


def bulleted(lines: Sequence[str]) -> str:
    """``lines`` as a Markdown list, one ``- line`` each (the problems an error lists)."""
    return "\n".join(f"- {line}" for line in lines)


def field_path(error: Mapping[str, Any], whole: str = "") -> str:
    """The dotted field path of one pydantic error (its ``loc``); ``whole`` when the problem is
    the value itself (an empty ``loc``)."""
    return ".".join(str(part) for part in error["loc"]) or whole


def first_problem(exc: ValidationError, whole: str = "") -> str:
    """``path: message`` of a validation error's first problem (:func:`field_path`; just the
    message when there is no path)."""
    error = exc.errors()[0]
    where = field_path(error, whole)
    return f"{where}: {error['msg']}" if where else str(error["msg"])


class AgentScopeTeamsError(Exception):
    """Root of every error raised on purpose by agentscope-teams."""


class ConfigurationError(AgentScopeTeamsError):
    """A configuration that cannot work; raised as early as possible (construction time)."""


class MissingDependencyError(ConfigurationError, ImportError):
    """An optional dependency is missing; the message names the extra that installs everything
    missing (``extra``) and, when known, every missing package (``missing``)."""

    def __init__(self, what: str, extra: str, missing: Sequence[str] = ()) -> None:
        needs = (
            f"needs {', '.join(missing)}, not installed"
            if missing
            else "needs an optional dependency that is not installed"
        )
        super().__init__(f"{what} {needs}: run `pip install 'agentscope-teams[{extra}]'`")
        self.extra = extra
        self.missing = tuple(missing)


class OptionError(ConfigurationError, TypeError):
    """An option a constructor does not take (``max_dpeth=3``), or of the wrong type; raised at
    construction. ``option`` names it, ``suggestion`` is the closest known option (or None). Also
    a ``TypeError``, which Python raises for an unexpected keyword argument."""

    def __init__(self, message: str, *, option: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.option = option
        self.suggestion = suggestion


class StoreError(AgentScopeTeamsError):
    """The store could not perform an operation.

    ``public``: the same failure told without where the store is or the driver's words (see
    :func:`public_message`); a backend passes it whenever its message names such things.
    """

    _public: str | None = None

    def __init__(self, *args: object, public: str | None = None) -> None:
        super().__init__(*args)
        self._public = public


def public_message(exc: BaseException) -> str:
    """What anyone but the operator (an HTTP client, a model) may read of ``exc``: a store error's
    public form when it has one (no URL, host, user, database or driver text), else its message.
    The one rule for every place that shows an error outside the process."""
    public = getattr(exc, "_public", None)
    return public if isinstance(public, str) else str(exc)


class VersionConflict(StoreError):
    """A conditional write failed: the key's version was not the expected one. Nothing was written."""

    def __init__(self, key: Sequence[str], expected: int | None, found: int | None) -> None:
        self.key = tuple(key)
        self.expected = expected
        self.found = found
        shown = "absent" if not found else f"version {found}"
        super().__init__(
            f"version conflict on key {self.key!r}: expected version {expected}, found {shown}; "
            "reload the value and retry"
        )


class LeaseLostError(VersionConflict):
    """A fenced write failed: the lease at ``lease_key`` no longer names this holder (it expired,
    was released, or another caller took it over). Nothing was written."""

    def __init__(self, key: Sequence[str], lease_key: Sequence[str]) -> None:
        super().__init__(key, None, None)
        self.lease_key = tuple(lease_key)
        self.args = (
            f"write to {self.key!r} refused: the lease {self.lease_key!r} is no longer held by "
            "this caller (expired or taken over); another caller owns the session now, so reload "
            "and retry the call",
        )


class ValueTooLargeError(StoreError):
    """A value exceeds the store's configured ``max_value_bytes``; nothing was written."""

    def __init__(self, key: Sequence[str], size: int, limit: int) -> None:
        self.key, self.size, self.limit = tuple(key), size, limit
        super().__init__(
            f"value for key {self.key!r} is {size} bytes, over the limit of {limit} bytes; "
            "shrink it or raise max_value_bytes"
        )


class StoreUnavailableError(StoreError):
    """The server behind a store URL could not be reached. The URL in the message has no password."""


class StoreBusyError(StoreUnavailableError):
    """No pooled connection (or Redis gate turn) came free within the pool's wait: the store is
    reachable, only busy. Retry after ``retry_after`` seconds (the control plane answers 503 with
    ``Retry-After``); ``limit`` is the pool's size, ``waited`` the seconds waited."""

    def __init__(
        self,
        message: str,
        *,
        limit: int | None = None,
        waited: float = 0.0,
        retry_after: float = 1.0,
        public: str | None = None,
    ) -> None:
        super().__init__(message, public=public)
        self.limit, self.waited, self.retry_after = limit, waited, retry_after


class SchemaVersionError(StoreError):
    """A persisted record has a schema_version newer than this code understands."""


class LimitError(AgentScopeTeamsError, ValueError):
    """A number or a text is outside its documented bounds (``field``, ``limit``); nothing was done.

    Also a ``ValueError``: a model's tool call gets it as a tool error, the control plane as 422.
    """

    def __init__(self, field: str, limit: float, message: str) -> None:
        self.field, self.limit = field, limit
        super().__init__(message)


class EventIdError(AgentScopeTeamsError, ValueError):
    """A ``Last-Event-ID`` the event stream never sent: too long, malformed, or naming an event
    past the end of its stream (``event_id``, shortened to 80 characters). The control plane
    answers 400; reconnect without it to start from the current state."""

    def __init__(self, event_id: str, reason: str) -> None:
        self.event_id = event_id[:80]
        super().__init__(
            f"Last-Event-ID {self.event_id!r}{'...' if len(event_id) > 80 else ''} {reason}; "
            "reconnect without it to receive the current state"
        )


class SubagentError(AgentScopeTeamsError):
    """A subagent run could not finish."""


class GitError(SubagentError):
    """A git command of ``isolation: worktree`` failed (the message names the command and holds
    git's own message) or took too long."""


class ChildPausedError(SubagentError, RuntimeError):
    """The child stopped to ask for a confirmation nobody can give; also a RuntimeError, as before."""


class SessionBusyError(AgentScopeTeamsError):
    """Another caller holds the session's lease and did not release it within the wait timeout."""


class SpecError(AgentScopeTeamsError):
    """A subagent spec is invalid. ``file`` and ``line`` (1-based, inside the file) locate it."""

    def __init__(self, file: Path | str | None, line: int | None, reason: str) -> None:
        self.file = Path(file) if file is not None else None
        self.line = line
        self.reason = reason
        where = str(self.file) if self.file is not None else "<spec>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {reason}")


class SpecErrors(SpecError):
    """Several spec problems at once; ``errors`` holds each :class:`SpecError` (file and line)."""

    def __init__(self, errors: Sequence[SpecError], source: Path | str | None = None) -> None:
        self.errors = list(errors)
        files = {error.file for error in self.errors}
        listing = "\n".join(f"  {error}" for error in self.errors)
        reason = (
            f"{_plural(len(self.errors), 'problem')} in {_plural(len(files), 'spec file')}; "
            f"fix each one and load again:\n{listing}"
        )
        super().__init__(source, None, reason)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class TeamError(AgentScopeTeamsError):
    """A task board or mailbox operation broke a rule."""


class ClaimConflict(TeamError):
    """The task is held by another member (or another claimer won the race)."""

    def __init__(self, task_id: str, owner: str | None, reason: str = "") -> None:
        self.task_id, self.owner = task_id, owner
        super().__init__(
            reason or f"task {task_id!r} is already claimed by {owner!r}; claim another task"
        )


class TaskStateError(TeamError):
    """The task's status does not allow the requested transition."""


class NotTaskOwnerError(TeamError):
    """Only the member that owns a task may complete, fail or release it."""


class ResultUnchecked(TeamError):
    """A completion of a task with a ``result_schema`` whose data was not checked against it yet:
    the task rule refuses it and writes nothing; the board checks the data off the event loop and
    tries again (it never reaches a caller)."""


class UnknownMemberError(TeamError):
    """The named member does not exist in the team."""


class UnknownTeamError(TeamError):
    """No team with this id is visible in the caller's (org, user) scope."""


class UnknownTaskError(TeamError):
    """No task with this id exists on the team's board."""


class TaskBlockedError(TeamError):
    """A ``TaskCreated`` hook refused a task (exit 2 or ``decision: "block"``): it was not created.

    ``title`` is the refused task's title, ``reason`` the hooks' stderr (or ``reason``), ``hooks``
    the labels of the hooks that refused it."""

    def __init__(self, title: str, reason: str, hooks: list[str]) -> None:
        self.title, self.reason, self.hooks = title, reason, list(hooks)
        by = ", ".join(self.hooks) or "a TaskCreated hook"
        super().__init__(
            f"task {title!r} was not created: the TaskCreated hook {by} refused it: "
            f"{reason or '(no reason given)'}; change the task as the reason says and assign "
            "it again"
        )


class ToolError(AgentScopeTeamsError):
    """Raised by a tool to report a problem to the model; becomes an error tool result."""


class WebAccessError(ToolError):
    """``web_fetch`` or ``web_search`` refused a URL or could not get an answer.

    ``url`` is the URL involved (for a search, the provider's endpoint), ``reason`` a stable code
    (``invalid_url``, ``blocked_address``, ``unresolvable``, ``unsupported_content``,
    ``too_many_redirects``, ``timeout``, ``http_status``, ``connection``, ``search_failed``) and
    ``status`` the HTTP status code when there was a response.
    """

    def __init__(self, message: str, *, url: str, reason: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.reason = reason
        self.status = status


class CannotConvert(AgentScopeTeamsError, ValueError):
    """The AgentScope data has something this project cannot represent without changing behaviour."""


class SyncCallInsideLoopError(AgentScopeTeamsError, RuntimeError):
    """A blocking ``*_sync`` method (``HarnessAgent.call_sync``) was called while an event loop
    runs in this thread; the message names the ``await`` form to use instead."""


class HITLError(AgentScopeTeamsError):
    """A human-in-the-loop event does not match the paused reply (wrong reply_id or tool call).

    ``tool_call_id`` names the tool call the answer got wrong, when the error is about one call.
    """

    def __init__(self, message: str, tool_call_id: str | None = None) -> None:
        super().__init__(message)
        self.tool_call_id = tool_call_id


class OutputError(AgentScopeTeamsError):
    """Structured output could not be produced or checked (see :mod:`agentscope_teams.agent.output`)."""


class InvalidSchema(OutputError, ValueError):
    """A JSON schema we do not accept: not valid, or outside the rules of
    :mod:`agentscope_teams.schema_guard` (a remote ``$ref``, a ``$ref`` cycle, too large...).
    ``path`` is where inside the schema (keys and indexes). Also a ``ValueError``: a model's tool
    call gets it as a tool error, the control plane as 422."""

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.path = path


class OutputValidationError(OutputError, ValueError):
    """A value does not match its schema. ``problems`` holds one line per problem, each starting
    with the field path (``items.0.line: Input should be a valid integer``); ``output_name``
    names the schema. Also a ``ValueError``: a team tool turns it into a tool error."""

    def __init__(self, output_name: str, problems: Sequence[str], message: str = "") -> None:
        self.output_name = output_name
        self.problems = list(problems)
        super().__init__(
            message or f"the value does not match {output_name}:\n{bulleted(self.problems)}"
        )


class OutputRetriesExceededError(OutputError):
    """The model did not give an output matching ``output_name`` within the retry limit
    (``attempts`` answers were rejected; ``problems`` are those of the last one). The reply is
    over and its conversation is saved; raise the retry limit
    (``ReActConfig.output_retries``) or simplify the schema."""

    def __init__(
        self, output_name: str, attempts: int, problems: Sequence[str], reply_id: str = ""
    ) -> None:
        self.output_name, self.attempts, self.reply_id = output_name, attempts, reply_id
        self.problems = list(problems)
        super().__init__(
            f"the model gave no valid {output_name} after {attempts} attempt(s); the last one "
            f"had these problems:\n{bulleted(self.problems)}\nRaise ReActConfig.output_retries or simplify the "
            "output type"
        )


class OutputTypeMismatchError(OutputError):
    """A paused reply was resumed with an ``output_type`` whose JSON schema is not the one the
    reply started with (``output_name`` is the stored one). Nothing was changed: resume with the
    same type, or without ``output_type`` to get the value as JSON data."""

    def __init__(self, output_name: str, given: str, reply_id: str) -> None:
        self.output_name, self.given, self.reply_id = output_name, given, reply_id
        super().__init__(
            f"reply {reply_id} is paused with output type {output_name!r}, but it was resumed "
            f"with {given!r} whose JSON schema differs; resume with the same type, or without "
            "output_type to get the value as JSON data"
        )


class CommandError(AgentScopeTeamsError):
    """A CLI command could not do what was asked (missing session, ambiguous name, ...)."""


class ControlPlaneError(AgentScopeTeamsError):
    """The control plane answered with an unexpected status, or could not be reached."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ControlPlaneAuthError(ControlPlaneError):
    """401: the token is missing, unknown, revoked or expired; 403: it may not do this."""


class UsageLimitError(AgentScopeTeamsError):
    """A budget or a shared rate limit stopped a model call before it was sent."""


class BudgetExceededError(UsageLimitError):
    """A budget is spent: no model call is sent on it any more.

    ``budget`` names it (``team:research``, ``session:s1``, ...), ``unit`` is ``tokens`` or
    ``usd``, ``limit`` and ``used`` are in that unit (``used`` counts settled calls and those in
    flight) and ``over`` is how far past the limit it is (0 when exactly at it). ``reason`` is
    what happened without the advice on what to do (the message when none is given).
    """

    def __init__(
        self,
        message: str,
        *,
        budget: str,
        unit: str,
        limit: float,
        used: float,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.budget, self.unit, self.limit, self.used = budget, unit, limit, used
        self.over = max(0.0, used - limit)
        self.reason = message if reason is None else reason


class RateLimitWaitError(UsageLimitError):
    """A shared rate limit gave no turn within the caller's wait bound (``limit`` names it,
    ``waited`` is in seconds)."""

    def __init__(self, message: str, *, limit: str, waited: float) -> None:
        super().__init__(message)
        self.limit, self.waited = limit, waited


class ModelError(AgentScopeTeamsError):
    """A chat model call failed.

    Besides the message, the fields say what is known (None otherwise): ``status_code`` (the HTTP
    status), ``code`` (the provider's error code, e.g. ``"rate_limit_exceeded"``), ``body`` (an
    excerpt of the error response), ``model`` (the model id) and ``base_url`` (without a password).
    None of them holds the API key.
    """

    def __init__(
        self,
        message: str = "",
        *,
        status_code: int | None = None,
        code: str | None = None,
        body: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code, self.code, self.body = status_code, code, body
        self.model, self.base_url = model, base_url


class ModelConfigurationError(ModelError, ConfigurationError):
    """The model cannot be configured (missing API key or base URL)."""


class AuthenticationError(ModelError):
    """The endpoint rejected the credentials (HTTP 401/403)."""


class RateLimitError(ModelError):
    """HTTP 429 persisted through every retry; ``retry_after`` is the wait in seconds the
    provider's headers asked for (``Retry-After``, ``x-ratelimit-reset-*``,
    ``anthropic-ratelimit-*-reset``), or None."""

    retry_after: float | None = None


class ModelServerError(ModelError):
    """HTTP 5xx persisted through every retry."""


class ModelConnectionError(ModelError):
    """The model endpoint could not be reached."""


class ModelTimeoutError(ModelError):
    """The model request timed out."""


class ModelResponseError(ModelError):
    """The model endpoint answered with something that is not a valid response."""
