"""The settings that restrict hooks (Claude Code's), layered managed > project.

- ``allowedHttpHookUrls``: URL patterns (``*`` matches any run of characters) an http hook may
  POST to. Absent: no restriction; an empty list: no http hook may run. A hook whose URL no
  pattern matches is not requested (:meth:`HookPolicy.refusal`).
- ``httpHookAllowedEnvVars``: the environment variable names header interpolation may use; each
  http hook's own ``allowedEnvVars`` is cut down to them. Absent: no restriction.
- ``allowManagedHooksOnly`` (managed settings only): only the managed settings' hooks (and the
  operator's own, given in code) run; a project's settings hooks and spec ``hooks:`` do not.
- ``disableAllHooks``: in managed settings every hook from a file (managed, project, spec) is off;
  in a project's settings only that project's hooks are (a project cannot turn the admin's off).

Managed settings are one JSON file an administrator controls: ``$AGENTSCOPE_TEAMS_MANAGED_SETTINGS``
when set (empty: none), else Claude Code's own ``managed-settings.json`` path for the platform. For
the two lists, a managed value decides alone (a project cannot widen an admin's list); otherwise
the values of the project's ``settings.json`` and ``settings.local.json`` are joined (Claude Code
merges arrays across its settings files). A project's values count only when it is trusted.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..text_files import read_text_file
from .hook import Hook
from .outcome import HookOutcome, cannot_answer

__all__ = ["MANAGED_SETTINGS_ENV", "HookPolicy", "managed_settings_path", "read_settings"]

MANAGED_SETTINGS_ENV = "AGENTSCOPE_TEAMS_MANAGED_SETTINGS"
_CLAUDE_MANAGED = {
    "darwin": "/Library/Application Support/ClaudeCode/managed-settings.json",
    "win32": r"C:\Program Files\ClaudeCode\managed-settings.json",
}
_URLS, _ENV = "allowedHttpHookUrls", "httpHookAllowedEnvVars"


def managed_settings_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The managed settings file (see the module docstring); None when switched off."""
    env = os.environ if environ is None else environ
    if MANAGED_SETTINGS_ENV in env:
        return Path(env[MANAGED_SETTINGS_ENV]).expanduser() if env[MANAGED_SETTINGS_ENV] else None
    return Path(_CLAUDE_MANAGED.get(sys.platform, "/etc/claude-code/managed-settings.json"))


def read_settings(path: Path) -> dict[str, Any]:
    """A settings file's object (empty when the file is absent); a file that is not a JSON object
    is a ConfigurationError naming it."""
    if not path.is_file():
        return {}
    text = read_text_file(path, "the settings file")
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"{path}: not valid JSON ({exc}); fix the file") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: a settings file must hold a JSON object; fix the file")
    return data


@dataclass(frozen=True)
class HookPolicy:
    """What the settings allow hooks (see the module docstring). ``urls`` / ``env_vars`` None:
    no restriction; ``url_files`` / ``env_files`` the files that set them (for errors)."""

    urls: tuple[str, ...] | None = None
    url_files: tuple[Path, ...] = ()
    env_vars: tuple[str, ...] | None = None
    env_files: tuple[Path, ...] = ()
    managed_only: bool = False
    all_off: bool = False

    @classmethod
    def layered(cls, managed: Mapping[str, Any], managed_file: Path | None,
                project: Sequence[tuple[Path, Mapping[str, Any]]]) -> HookPolicy:  # fmt: skip
        """The policy of a managed settings object and the project's (file, object) pairs."""
        urls, url_files = _list(_URLS, managed, managed_file, project)
        env_vars, env_files = _list(_ENV, managed, managed_file, project)
        return cls(
            urls=urls,
            url_files=url_files,
            env_vars=env_vars,
            env_files=env_files,
            managed_only=managed.get("allowManagedHooksOnly") is True,
            all_off=managed.get("disableAllHooks") is True,
        )

    @property
    def files_closed(self) -> bool:
        """Whether a project's settings hooks and spec ``hooks:`` are kept from running."""
        return self.managed_only or self.all_off

    def allows(self, url: str) -> bool:
        return self.urls is None or any(_pattern(p).fullmatch(url) for p in self.urls)

    def env_for(self, hook: Hook) -> tuple[str, ...]:
        """The names ``hook``'s headers may take from the environment."""
        if self.env_vars is None:
            return hook.allowed_env
        return tuple(n for n in hook.allowed_env if n in self.env_vars)

    def refusal(self, hook: Hook) -> HookOutcome | None:
        """None when ``hook`` may be requested; else its outcome: on a guard event a deny (a
        guard that cannot run never lets calls through), elsewhere a non-blocking error; both
        name the settings file, the hook and the URL."""
        if hook.kind != "http" or hook.url is None or self.allows(hook.url):
            return None
        files = ", ".join(map(str, self.url_files))
        listed = ", ".join(self.urls or ()) or "an empty list: no http hook may run"
        why = f"its URL {hook.url} matches no pattern of allowedHttpHookUrls in {files} ({listed})"
        return cannot_answer(
            hook, f"was not run: {why}", "add a pattern for it there, or remove the hook"
        )


def _list(
    key: str,
    managed: Mapping[str, Any],
    managed_file: Path | None,
    project: Sequence[tuple[Path, Mapping[str, Any]]],
) -> tuple[tuple[str, ...] | None, tuple[Path, ...]]:
    """The value of the list setting ``key``: the managed one alone, else the project's joined."""
    if key in managed and managed_file is not None:
        return _names(managed[key], key, managed_file), (managed_file,)
    found: list[str] = []
    files: list[Path] = []
    for path, data in project:
        if key in data:
            found += _names(data[key], key, path)
            files.append(path)
    return (tuple(dict.fromkeys(found)), tuple(files)) if files else (None, ())


def _names(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{path}: {key} must be a list of strings; fix the file")
    return tuple(value)


@lru_cache(maxsize=256)
def _pattern(glob: str) -> re.Pattern[str]:
    """A URL pattern: ``*`` matches any run of characters, everything else itself."""
    return re.compile(".*".join(re.escape(part) for part in glob.split("*")))
