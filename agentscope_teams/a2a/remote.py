"""A remote A2A agent as the model of a subagent: each turn of the child is one A2A message.

The subagent machinery (run records, background runs, ``agent_send``, ``agent_cancel``, the
child's stored session) stays as it is; only the child's model is this :class:`RemoteA2AModel`,
which sends the new user text of each request to the remote agent and returns its answer.

* The child session's conversation with the remote agent (its ``contextId`` and a task waiting
  for input) is kept in the store (``a2a-remote`` key), so any process continues it.
* A task in ``input-required`` ends the turn with the remote agent's question; the next message
  of that child session (``agent_send`` to the run) is sent on that task, as its answer.
* A turn sends with ``returnImmediately`` and reads the task until it stops running, so a
  cancelled turn (``agent_cancel``, a timeout) cancels the remote task.
* Failures are :class:`~agentscope_teams.errors.ModelError` naming the remote agent and its URL:
  the run fails with that message, which is what the parent agent reads.
* ``a2a.headers`` (API keys) go only to the origin (scheme, host, port) of ``a2a.url``, where the
  user pointed them. The Agent Card read there names the endpoint the SDK then calls; when that is
  another origin, its requests go without the headers (as a browser or httpx drops credentials on
  a redirect to another origin) and a warning names both origins: a card cannot send the keys to
  a host the user never named. If that agent needs them, the turn fails there (say with 401); set
  ``a2a.url`` to the endpoint's own origin (its card under ``/.well-known/``) instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel

from ..context import RuntimeContext, current_context
from ..errors import MissingDependencyError, ModelConnectionError, ModelError, ModelTimeoutError
from ..keys import a2a_remote_key
from ..message import TextBlock
from ..model.base import ModelRequest, ModelResponse, StreamItem
from ..model.scripted import replay
from ..store.base import BaseStore
from .compat import lenient_transport
from .config import RemoteAgentConfig

log = logging.getLogger(__name__)

_RUNNING = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_UNSPECIFIED")
_CANCEL_SECONDS = 10.0
INPUT_REQUIRED_NOTE = (
    "[input required] The remote agent {name} needs an answer before it can go on:\n{question}\n"
    "Answer it with agent_send to this run: your message goes to the remote agent as the answer."
)


@dataclass(frozen=True)
class RemoteReply:
    """What the remote agent said; ``waiting``: its task waits for an answer to ``text``."""

    text: str
    waiting: bool = False


class RemoteConversation(BaseModel):
    """One session's conversation with a remote agent: its context, and a task waiting for input."""

    schema_version: int = 1
    context_id: str | None = None
    task_id: str | None = None


def require_sdk(what: str) -> None:
    """Raise :class:`MissingDependencyError` naming the ``a2a`` extra when the SDK is missing."""
    try:
        import a2a.client  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(what, "a2a", ["a2a-sdk"]) from exc


class RemoteA2AModel:
    """The chat model of the subagent ``name``: the remote A2A agent of ``config``."""

    def __init__(self, name: str, config: RemoteAgentConfig, store: BaseStore) -> None:
        self.name, self.config, self.store = name, config, store

    @property
    def model_name(self) -> str:
        return f"a2a:{self.name}"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        text = _turn_text(request, self._where())
        answer = await self.turn(current_context(), text)
        return ModelResponse(content=[TextBlock(text=answer)], model=self.model_name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        for item in replay(await self.generate(request)):
            yield item

    # -- one turn ----------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"remote A2A agent {self.name!r} ({self.config.url})"

    async def turn(self, ctx: RuntimeContext, text: str) -> str:
        """Send ``text`` in ``ctx``'s conversation; the answer (or the remote agent's question)."""
        reply = await self.ask(ctx, text)
        if reply.waiting:
            return INPUT_REQUIRED_NOTE.format(name=self.name, question=reply.text or "(none)")
        return reply.text

    async def ask(self, ctx: RuntimeContext, text: str, *, answers: bool = True) -> RemoteReply:
        """Send ``text`` in ``ctx``'s conversation: the answer, or the question of a task that
        waits for input (the next ``ask`` of this conversation answers it, unless ``answers`` is
        False: then ``text`` starts a new task in the same context)."""
        key = a2a_remote_key(ctx.org_id, ctx.user_id, self.name, ctx.session_id)
        entry = await self.store.get(key)
        talk = (
            RemoteConversation.model_validate_json(entry.value) if entry else RemoteConversation()
        )
        if not answers:
            talk = RemoteConversation(context_id=talk.context_id)
        async with self._client() as client:
            try:
                task_or_message = await self._exchange(client, talk, text)
            except ModelError as exc:
                if talk.task_id and _task_gone(exc):  # the next turn starts a new task
                    fresh = RemoteConversation(context_id=talk.context_id)
                    await self.store.put(key, fresh.model_dump_json().encode())
                raise
        reply, talk = self._outcome(task_or_message, talk)
        await self.store.put(key, talk.model_dump_json().encode())
        return reply

    async def abandon(self, ctx: RuntimeContext) -> None:
        """Cancel the remote task of ``ctx``'s conversation that waits for input, which nobody
        will answer (a board task's question), and forget it: left waiting, it would be kept by
        the remote agent for good. A cancel that fails is logged; the conversation is let go."""
        key = a2a_remote_key(ctx.org_id, ctx.user_id, self.name, ctx.session_id)
        entry = await self.store.get(key)
        talk = RemoteConversation.model_validate_json(entry.value) if entry else None
        if talk is None or not talk.task_id:
            return
        try:
            async with self._client() as client:
                await self._cancel_remote(client, [talk.task_id])
        except ModelError as exc:
            log.warning(
                "%s: its waiting task %s was not cancelled: %s", self._where(), talk.task_id, exc
            )
        fresh = RemoteConversation(context_id=talk.context_id)
        await self.store.put(key, fresh.model_dump_json().encode())

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        """The SDK's client of the remote agent (its card read), over an HTTP client that sends
        ``a2a.headers`` to ``a2a.url``'s origin only."""
        import httpx

        credentials = _OriginHeaders(self.name, self.config)
        http = httpx.AsyncClient(
            event_hooks={"request": [credentials.add]},
            timeout=self.config.timeout,
            transport=lenient_transport(httpx.AsyncHTTPTransport()),
        )
        async with http:
            client = await self._connect(http)
            try:
                yield client
            finally:
                await client.close()

    async def _connect(self, http: Any) -> Any:
        from a2a.client import ClientConfig, create_client

        base, card_path = self.config.card_location
        for attempt in range(self.config.retries + 1):
            try:
                return await create_client(
                    base,
                    ClientConfig(httpx_client=http, streaming=False),
                    relative_card_path=card_path,
                )
            except Exception as exc:
                if attempt == self.config.retries:
                    raise ModelConnectionError(
                        f"{self._where()}: cannot read its Agent Card after "
                        f"{attempt + 1} attempt(s): {exc}; check the URL and the headers",
                        model=self.model_name,
                        base_url=self.config.url,
                    ) from exc
                await anyio.sleep(0.5 * 2**attempt)
        raise AssertionError("unreachable")

    async def _exchange(self, client: Any, talk: RemoteConversation, text: str) -> Any:
        from a2a.helpers.proto_helpers import new_text_part
        from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest

        message = Message(
            message_id=uuid.uuid4().hex,
            role=Role.ROLE_USER,
            parts=[new_text_part(text)],
            context_id=talk.context_id or "",
            task_id=talk.task_id or "",
        )
        request = SendMessageRequest(message=message)
        request.configuration.return_immediately = True
        running: list[str] = []
        try:
            with anyio.fail_after(self.config.timeout):
                return await self._until_stopped(client, request, running)
        except TimeoutError:
            await self._cancel_remote(client, running)
            raise ModelTimeoutError(
                f"{self._where()} did not answer within {self.config.timeout:g} s (a2a.timeout); "
                "its task was cancelled",
                model=self.model_name,
                base_url=self.config.url,
            ) from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel_remote(client, running)
            raise
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(
                f"{self._where()} failed: {type(exc).__name__}: {exc}",
                model=self.model_name,
                base_url=self.config.url,
            ) from exc

    async def _until_stopped(self, client: Any, request: Any, running: list[str]) -> Any:
        """The task (or message) the send returns, read again until it stops running."""
        from a2a.types.a2a_pb2 import GetTaskRequest, TaskState

        found = [event async for event in client.send_message(request)]
        if not found:
            raise ModelError(f"{self._where()} returned nothing", model=self.model_name)
        last = found[-1]
        if last.HasField("message"):
            return last.message
        task = last.task
        running.append(task.id)
        while TaskState.Name(task.status.state) in _RUNNING:
            await anyio.sleep(self.config.poll)
            task = await client.get_task(GetTaskRequest(id=task.id))
        return task

    async def _cancel_remote(self, client: Any, running: list[str]) -> None:
        from a2a.types.a2a_pb2 import CancelTaskRequest

        for task_id in running:
            # already finished, or unreachable: nothing more to do
            with anyio.move_on_after(_CANCEL_SECONDS), contextlib.suppress(Exception):
                await client.cancel_task(CancelTaskRequest(id=task_id))

    def _outcome(
        self, result: Any, talk: RemoteConversation
    ) -> tuple[RemoteReply, RemoteConversation]:
        from a2a.types.a2a_pb2 import Message, TaskState

        if isinstance(result, Message):
            context = result.context_id or talk.context_id
            return RemoteReply(_parts_text(result.parts)), RemoteConversation(context_id=context)
        state = TaskState.Name(result.status.state)
        context = result.context_id or talk.context_id
        said = _parts_text(result.status.message.parts)
        if state == "TASK_STATE_COMPLETED":
            answer = "\n".join(_parts_text(a.parts) for a in result.artifacts) or said
            return RemoteReply(answer), RemoteConversation(context_id=context)
        if state == "TASK_STATE_INPUT_REQUIRED":
            waiting = RemoteConversation(context_id=context, task_id=result.id)
            return RemoteReply(said, waiting=True), waiting
        raise ModelError(
            f"{self._where()}: its task {result.id} ended {state.removeprefix('TASK_STATE_')}"
            + (f": {said}" if said else ""),
            model=self.model_name,
            base_url=self.config.url,
            code=state,
        )


def _origin(url: Any) -> str:
    """``scheme://host:port`` of an ``httpx.URL`` (the default port written out)."""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return f"{url.scheme}://{url.host}:{port}"


class _OriginHeaders:
    """An httpx request hook adding ``a2a.headers`` to requests for ``a2a.url``'s origin only
    (module docstring); the first request to each other origin logs a warning."""

    def __init__(self, name: str, config: RemoteAgentConfig) -> None:
        import httpx

        self.name, self.url, self.headers = name, config.url, config.headers
        self.origin = _origin(httpx.URL(config.url))
        self.elsewhere: set[str] = set()

    async def add(self, request: Any) -> None:
        origin = _origin(request.url)
        if origin == self.origin:
            request.headers.update(self.headers)
        elif self.headers and origin not in self.elsewhere:
            self.elsewhere.add(origin)
            log.warning(
                "remote A2A agent %r: its Agent Card (%s) sends requests to %s, another origin "
                "than a2a.url's %s; a2a.headers are not sent there. If it needs them, set a2a.url "
                "to that origin",
                self.name,
                self.url,
                origin,
                self.origin,
            )


def _task_gone(exc: ModelError) -> bool:
    """Whether the remote agent's waiting task takes no more answers after the failure ``exc`` of
    an answer sent on it: the remote refused the request (the task ended, or it does not know it:
    a protocol error, not a transport one), or the turn timed out (the task was cancelled)."""
    from a2a.client.errors import A2AClientError
    from a2a.utils.errors import A2AError

    cause = exc.__cause__
    refused = isinstance(cause, A2AError) and not isinstance(cause, A2AClientError)
    return refused or isinstance(exc, ModelTimeoutError)


def _turn_text(request: ModelRequest, where: str) -> str:
    """The user text since the last answer (the task, an ``agent_send`` message, ...)."""
    texts: list[str] = []
    for msg in reversed(request.messages):
        if msg.role == "assistant":
            break
        texts.append(msg.get_text_content())
    text = "\n\n".join(t for t in reversed(texts) if t)
    if not text:
        raise ModelError(
            f"nothing to send to the {where}: the turn has no text; give the task (or the "
            "agent_send message) some text"
        )
    return text


def _parts_text(parts: Any) -> str:
    """Text parts as they are, data parts as JSON, files by name."""
    out = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            out.append(part.text)
        elif kind == "data":
            from google.protobuf.json_format import MessageToDict

            out.append(json.dumps(MessageToDict(part.data), ensure_ascii=False))
        elif kind in ("url", "raw"):
            out.append(f"[file {part.filename or part.url or '(inline)'}]")
    return "\n".join(out)
