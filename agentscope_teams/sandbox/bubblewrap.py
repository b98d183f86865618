"""The bubblewrap backend: every command in fresh namespaces, seeing the system read-only and
only its own workspace read-write.

What a command sees (:meth:`BubblewrapSandbox.argv`):

* ``/usr``, ``/bin``, ``/sbin``, ``/lib*`` read-only; of ``/etc`` only the files in
  :data:`ETC_ALLOWED` (users and groups, name resolution, TLS roots, locale, time zone, the dynamic
  linker's cache), so ``/etc/shadow``, ``/etc/ssh``, ``/etc/ssl/private``, database passwords and
  whatever else an operator keeps there are absent;
* a new ``/proc`` (its own PID namespace), a minimal read-only ``/dev`` with a private
  size-bounded ``/dev/shm``, a private size-bounded ``/tmp`` with ``HOME=/tmp/home`` in it (all
  gone when the command ends);
* the workspace, read-write, at its own path, as the working directory; nothing else of the host
  (no other session's workspace, no ``/home``, ``/root``, ``/run``, host ``/tmp``);
* operator-chosen extra read-only paths (``read_only_paths=``, e.g. a toolchain in ``/opt``);
* of the workspace, what the call's :class:`~.base.PathMask` says (the agent's ``Read`` and
  ``Edit`` deny rules): an empty read-only directory over each hidden directory, an empty file
  nobody can read over each hidden file, each protected path bound read-only; a masked path that
  does not exist yet gets a placeholder first (:mod:`.placeholders`), and the command is stopped
  if another process removes or replaces a masked path while it runs (:mod:`.tripwire`);
* everything else of the sandbox's root file system is read-only too (no new files in ``/``).

Namespaces: user, PID, IPC, UTS, cgroup (when possible) and, unless ``network="full"``, network
(only a loopback interface of its own). All capabilities are dropped, the command runs in a new
session (no terminal to inject input into) and dies with its parent; nested user namespaces are
disabled when bubblewrap supports it. When the command's first process ends, the PID namespace
ends with it: anything it left running (``cmd &``, a double-forked ``setsid`` daemon) is killed.

Constructing the sandbox checks, once per configuration, that bubblewrap runs here (it raises
:class:`~agentscope_teams.errors.ConfigurationError` naming the Debian package ``bubblewrap``
otherwise); it never falls back to running commands unsandboxed.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from ..errors import ConfigurationError
from . import placeholders
from .base import PathMask, SandboxLimits
from .cgroup import PidsCgroup, pids_parent
from .environment import sandbox_environment, shell_argv
from .process import HostProcess, HostSandbox
from .tripwire import Tripwire

log = logging.getLogger(__name__)

Network = Literal["none", "full"]

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

ETC_ALLOWED = (
    "passwd", "group", "hostname", "hosts", "resolv.conf", "nsswitch.conf", "host.conf",
    "gai.conf", "services", "protocols", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
    "timezone", "alternatives", "ssl/certs", "ssl/openssl.cnf", "ca-certificates",
    "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust", "crypto-policies", "mime.types",
    "magic", "bash.bashrc", "profile", "inputrc", "locale.alias", "locale.conf", "default/locale",
    "os-release", "lsb-release", "debian_version", "terminfo", "gitconfig", "shells", "python3",
)  # fmt: skip
"""Entries of ``/etc`` a command may read (each bound read-only if it exists)."""

#: Paths a workspace may not be (or contain): binding it read-write would expose the host.
_RESERVED = ("/", "/etc", "/proc", "/dev", "/sys", "/tmp", "/run", "/var", "/home", "/root")

INSTALL_HINT = (
    "install the Debian package bubblewrap (apt-get install bubblewrap) and make sure "
    "unprivileged user namespaces are allowed (sysctl kernel.unprivileged_userns_clone=1 on "
    "Debian; kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04)"
)


@functools.cache
def _help_text(bwrap: str) -> str:
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout + done.stderr


def find_bwrap() -> str | None:
    """The bubblewrap executable on PATH (or ``/usr/bin/bwrap``), or None."""
    found = shutil.which("bwrap")
    if found is None and os.access("/usr/bin/bwrap", os.X_OK):
        found = "/usr/bin/bwrap"
    return found


def check_workspace(cwd: Path) -> str:
    """``cwd`` as a string if it can be bound as a workspace; raises ConfigurationError if it is
    relative, missing, reached through a symlink, or a system directory or the service user's
    home directory (or holds one)."""
    path = os.fspath(cwd)
    if not os.path.isabs(path):
        raise ConfigurationError(f"sandbox workspace {path!r} must be an absolute path")
    if not os.path.isdir(path):
        raise ConfigurationError(f"sandbox workspace {path} is not a directory")
    real = os.path.realpath(path)
    if real != os.path.normpath(path):
        raise ConfigurationError(
            f"sandbox workspace {path} resolves to {real} through a symlink; use the real path"
        )
    for reserved in (*_RESERVED, *SYSTEM_PATHS):
        if real == reserved or reserved.startswith(real.rstrip("/") + "/"):
            raise ConfigurationError(
                f"sandbox workspace {real} is (or contains) the system directory {reserved}; "
                "give the agent a directory of its own"
            )
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and (real == home or home.startswith(real.rstrip("/") + "/")):
        raise ConfigurationError(
            f"sandbox workspace {real} is (or contains) {home}, the home directory of the user "
            "running the service (its ~/.ssh, credentials and default store would be writable "
            "in the sandbox); give the agent a directory of its own, e.g. below it"
        )
    return real


def _tmp_shell(workspace: str) -> str | None:
    """For a workspace below ``/tmp``, the top directory holding it (``/tmp/a`` of
    ``/tmp/a/b/ws``), which gets a tmpfs of its own, remounted read-only once the workspace is
    bound: otherwise the workspace's parents would be writable directories of the private
    ``/tmp``."""
    parts = Path(workspace).parts
    if len(parts) > 3 and parts[1] == "tmp":
        return "/" + "/".join(parts[1:3])
    return None


_unreadable: list[str] = []


def _unreadable_file() -> str:
    """An empty host file of mode 000, bound over each hidden file: a command (without
    capabilities) cannot read it. Made once per process (again if something removed it)."""
    if _unreadable and os.path.isfile(_unreadable[0]):
        return _unreadable[0]
    directory = tempfile.mkdtemp(prefix="agentscope-sandbox-mask-")
    atexit.register(shutil.rmtree, directory, True)
    path = os.path.join(directory, "hidden")
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0))
    os.chmod(path, 0)
    _unreadable[:] = [path]
    return path


def mask_args(workspace: str, mask: PathMask | None) -> list[str]:
    """The bubblewrap options applying ``mask`` after the workspace is bound: the read-only
    paths first, then the hidden ones (a hidden file may lie in a read-only directory). Raises
    ValueError for a path outside ``workspace``."""
    if not mask:
        return []
    args: list[str] = []
    for path in (*mask.read_only, *mask.hidden):
        if path != workspace and not path.startswith(workspace.rstrip("/") + "/"):
            raise ValueError(f"masked path {path} is not inside the workspace {workspace}")
    for path in mask.read_only:
        if os.path.lexists(path):  # a missing one has a placeholder (_spawn), or cannot be
            args += ["--ro-bind", path, path]
    for path in mask.hidden:
        if not os.path.lexists(path):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", _unreadable_file(), path]
    return args


class BubblewrapSandbox(HostSandbox):
    """Runs commands under bubblewrap (module docstring).

    ``network``: ``"none"`` (default: a network namespace with only its own loopback) or
    ``"full"`` (the host's network). No allowlist of hosts is offered: it would need a filtering
    proxy outside the sandbox, and a name-based filter inside it can be bypassed. ``limits`` are
    the defaults of every command (a call may pass its own). ``env`` adds variables to every
    command's environment. ``read_only_paths`` are extra host paths shown read-only.
    """

    name = "bubblewrap"
    contained = True

    def __init__(
        self,
        network: Network = "none",
        *,
        limits: SandboxLimits | None = None,
        env: Mapping[str, str] | None = None,
        read_only_paths: Sequence[Path | str] = (),
        bwrap: str | None = None,
    ) -> None:
        if network not in ("none", "full"):
            raise ConfigurationError(f"network must be 'none' or 'full', got {network!r}")
        if not sys.platform.startswith("linux"):
            raise ConfigurationError(
                f"the bubblewrap sandbox needs Linux (this is {sys.platform}); run the service on "
                "Linux with the Debian package bubblewrap, or choose UnsafeHostSandbox knowingly"
            )
        found = bwrap or find_bwrap()
        if found is None:
            raise ConfigurationError(f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
        self.bwrap = found
        self.network: Network = network
        self.limits = limits or SandboxLimits()
        self.env = dict(env or {})
        self.read_only_paths = tuple(os.path.abspath(p) for p in read_only_paths)
        help_text = _help_text(found)
        self._disable_userns = "--disable-userns" in help_text
        self._sized_tmp = "--size" in help_text
        self._cgroup_parent = pids_parent()
        self._check_limits(self.limits)
        _probe(self)

    # -- the command line ------------------------------------------------------------------------

    def argv(
        self, command: str, cwd: Path, limits: SandboxLimits, mask: PathMask | None = None
    ) -> list[str]:
        """The bubblewrap command line running ``command`` in the workspace ``cwd``, with
        ``mask`` applied (:func:`mask_args`)."""
        workspace = check_workspace(cwd)
        args = [self.bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--hostname", "sandbox"]
        if self.network == "none":
            args.append("--unshare-net")
        if self._disable_userns:
            args.append("--disable-userns")
        for path in SYSTEM_PATHS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for entry in ETC_ALLOWED:
            args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
        args += ["--symlink", "/proc/self/mounts", "/etc/mtab"]
        args += ["--proc", "/proc", "--dev", "/dev"]
        if self._sized_tmp:  # /dev is a tmpfs of host memory too: only a bounded /dev/shm in it
            args += ["--size", str(limits.tmp_bytes), "--tmpfs", "/dev/shm"]
        args += ["--remount-ro", "/dev"]
        if self._sized_tmp:
            args += ["--size", str(limits.tmp_bytes)]
        args += ["--tmpfs", "/tmp", "--dir", "/tmp/home"]
        for path in self.read_only_paths:
            args += ["--ro-bind-try", path, path]
        shell = _tmp_shell(workspace)  # a workspace below /tmp: its parents stay read-only too
        if shell is not None:
            args += ["--tmpfs", shell]
        args += ["--bind", workspace, workspace, *mask_args(workspace, mask), "--remount-ro", "/"]
        if shell is not None:
            args += ["--remount-ro", shell]
        args += ["--chdir", workspace, "--"]
        return args + shell_argv(command, limits)

    def _check_limits(self, limits: SandboxLimits) -> None:
        if limits.max_processes is not None and os.geteuid() == 0 and self._cgroup_parent is None:
            raise ConfigurationError(
                "the sandbox cannot bound the process count: this process runs as root, which "
                "RLIMIT_NPROC does not bind, and no writable pids cgroup was found under "
                "/sys/fs/cgroup; run the service as a non-root user, give it a writable pids "
                "cgroup, or pass SandboxLimits(max_processes=None) to accept no bound"
            )

    def _spawn(
        self, command: str, cwd: Path, env: Mapping[str, str] | None, limits: SandboxLimits,
        lifetime: float | None, mask: PathMask | None = None,
    ) -> HostProcess:  # fmt: skip
        self._check_limits(limits)
        held = _hold_placeholders(cwd, mask)
        group: PidsCgroup | None = None
        started: list[HostProcess] = []
        changed: list[str] = []
        lock = threading.Lock()

        def trip(path: str) -> None:
            with lock:
                changed.append(path)
                for proc in started:
                    proc.stop(_replaced(path))

        wire = _tripwire(cwd, mask, trip)

        def on_exit() -> None:
            if wire is not None:
                wire.stop()
            if group is not None:
                group.remove()
            placeholders.release(held)

        try:
            argv = self.argv(command, cwd, limits, mask)
            full_env = sandbox_environment(
                cwd=str(cwd), home="/tmp/home", tmp="/tmp", extra={**self.env, **(env or {})}
            )
            if limits.max_processes is not None and self._cgroup_parent is not None:
                group = PidsCgroup.create(self._cgroup_parent, limits.max_processes + 2)
                argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group.procs), *argv]
            proc = HostProcess(
                argv, env=full_env, cwd=str(cwd), limits=limits, lifetime=lifetime, on_exit=on_exit
            )
        except BaseException:
            on_exit()
            raise
        with lock:
            started.append(proc)
            if changed:  # replaced before the process existed
                proc.stop(_replaced(changed[0]))
        return proc


def _replaced(path: str) -> str:
    return (
        f"the command was stopped: {path}, which the agent's deny rules hide or keep read-only, "
        "was removed or replaced by another process while it ran, and the sandbox could no "
        "longer keep it masked; run the command again"
    )


def _tripwire(cwd: Path, mask: PathMask | None, trip: Callable[[str], None]) -> Tripwire | None:
    """A watch over the paths of ``mask`` (:mod:`.tripwire`), or None without a mask."""
    if not mask:
        return None
    paths = [p for p in (*mask.read_only, *mask.hidden) if os.path.lexists(p)]
    return Tripwire(paths, os.path.realpath(cwd), trip) if paths else None


def _hold_placeholders(cwd: Path, mask: PathMask | None) -> list[str]:
    """The placeholders made for the missing paths of ``mask`` (:mod:`.placeholders`)."""
    if not mask:
        return []
    workspace = os.path.realpath(cwd)
    return placeholders.acquire((*mask.read_only, *mask.hidden), mask.directories, workspace)


_probed: dict[tuple[str, str, tuple[str, ...]], None] = {}


def _probe(sandbox: BubblewrapSandbox) -> None:
    """Run ``true`` in a throwaway workspace once per configuration; ConfigurationError if it fails."""
    key = (sandbox.bwrap, sandbox.network, sandbox.read_only_paths)
    if key in _probed:
        return
    limits = SandboxLimits(max_processes=None)  # the probe checks bubblewrap, not the cgroup
    with tempfile.TemporaryDirectory(prefix="agentscope-sandbox-probe-") as tmp:
        workspace = Path(os.path.realpath(tmp))
        argv = sandbox.argv("true", workspace, limits)
        env = sandbox_environment(cwd=str(workspace), home="/tmp/home", tmp="/tmp")
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ConfigurationError(
                f"bubblewrap at {sandbox.bwrap} cannot run: {exc}; {INSTALL_HINT}"
            ) from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[:500]
        raise ConfigurationError(
            f"bubblewrap at {sandbox.bwrap} failed a trivial command (exit {done.returncode}: "
            f"{said}); {INSTALL_HINT}"
        )
    _probed[key] = None
