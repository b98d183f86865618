"""Running one ``type: http`` hook: the event JSON POSTed to its ``url``, the reply read back.

Header values get ``$VAR`` / ``${VAR}`` from the environment only for the names the hook lists in
``allowedEnvVars``; any other reference becomes empty (Claude Code's rule: a project file cannot
send the operator's secrets to a URL of its choosing); the value is then trimmed, as HTTP does. A 2xx reply's body is read as a command
hook's stdout (:func:`~.outcome.from_stdout`); a non-2xx status, a refused connection or a timeout
is a non-blocking error (a status code alone never blocks). Redirects are not followed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

import anyio
import httpx

from .hook import Hook
from .outcome import HookOutcome, failed, from_stdout

__all__ = ["interpolate", "run_http"]

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_LIMIT = 1 << 20  # bytes of a reply kept


def interpolate(value: str, allowed: Iterable[str]) -> str:
    """``value`` with each ``$VAR`` / ``${VAR}`` replaced by the variable when ``allowed`` names
    it, else by nothing."""
    names = set(allowed)

    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return os.environ.get(name, "") if name in names else ""

    return _VAR.sub(one, value)


async def run_http(
    hook: Hook, payload: dict[str, Any], allowed_env: Iterable[str] | None = None
) -> HookOutcome:
    """POST ``payload`` to ``hook.url``; its answer (see the module docstring). ``allowed_env``
    (default: the hook's ``allowedEnvVars``) names the variables its headers may use: the hook's
    list cut down by the settings' ``httpHookAllowedEnvVars`` (:mod:`.policy`)."""
    assert hook.url is not None
    names = tuple(hook.allowed_env if allowed_env is None else allowed_env)
    headers = {k: interpolate(v, names).strip() for k, v in hook.headers}
    headers.setdefault("Content-Type", "application/json")
    body = json.dumps(payload, ensure_ascii=False, default=str).encode()
    reply: httpx.Response | None = None
    try:
        with anyio.move_on_after(hook.timeout):  # the whole exchange, not each read
            async with httpx.AsyncClient(timeout=hook.timeout, follow_redirects=False) as client:
                reply = await client.post(hook.url, content=body, headers=headers)
    except httpx.TimeoutException:
        reply = None
    except httpx.HTTPError as exc:
        return failed(hook.label, f"could not reach {hook.url}: {type(exc).__name__}: {exc}")
    if reply is None:
        return failed(hook.label, f"timed out after {hook.timeout:g}s")
    if not reply.is_success:
        text = reply.text[:200].strip()
        return failed(hook.label, f"answered HTTP {reply.status_code}{': ' + text if text else ''}")
    return from_stdout(hook.event, hook.label, reply.text[:_LIMIT])
