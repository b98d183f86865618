"""A throwaway Redis Cluster for tests: 6 local ``redis-server`` processes (3 primaries, 3 replicas).

:class:`LocalCluster` picks free loopback ports (each port and its cluster-bus port, port + 10000),
starts the servers with a short node timeout (so a killed primary fails over in a few seconds),
joins them with ``redis-cli --cluster create --cluster-replicas 1`` and waits for
``cluster_state:ok`` on every node. ``kill_primary`` SIGKILLs one primary, for failover tests;
``allow_failover`` holds its replica back from taking over until the test has seen the outage.
:class:`LocalPair` is a standalone primary and its replica (``replicaof``), for tests of writes
confirmed by replicas. :class:`SlotMove` moves one hash slot between primaries step by step (``CLUSTER SETSLOT``
IMPORTING / MIGRATING, ``MIGRATE`` of chosen keys, ``SETSLOT NODE``), for slot-migration tests.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NODES = 6
#: Milliseconds without an answer before a node is failed and its replica promoted.
NODE_TIMEOUT_MS = 1000


def cluster_binaries() -> tuple[str, str] | None:
    """Paths of ``redis-server`` and ``redis-cli``, or None when either is missing."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    return (server, cli) if server and cli else None


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    """``count`` ports whose cluster-bus ports (port + 10000) are free too."""
    found: list[int] = []
    while len(found) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 < 65536 and port not in found and _port_free(port + 10000):
            found.append(port)
    return found


def _cli(cli: str, port: int, *args: str, timeout: float = 5) -> str:
    done = subprocess.run(
        [cli, "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.stdout


@dataclass
class LocalCluster:
    """Six ``redis-server`` processes joined into one cluster under ``workdir``."""

    workdir: Path
    ports: list[int] = field(default_factory=list)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The ``redis+cluster://`` URL listing every node as a startup node."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports) + "/"

    def start(self) -> None:
        binaries = cluster_binaries()
        assert binaries is not None, "redis-server and redis-cli are needed"
        server, cli = binaries
        for _attempt in range(3):  # a port taken between choosing and binding: choose again
            self.ports = _free_ports(NODES)
            for port in self.ports:
                self._start_node(server, port)
            if self._all_answer(cli):
                break
            self.stop()
        else:
            raise RuntimeError(f"could not start {NODES} redis-server processes in {self.workdir}")
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        created = subprocess.run(
            [cli, "--cluster", "create", *nodes, "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if created.returncode != 0:
            self.stop()
            raise RuntimeError(
                f"redis-cli --cluster create failed: {created.stdout}{created.stderr}"
            )
        self.wait_ok(cli, self.ports)
        self._wait_replicas_synced(cli)

    def _start_node(self, server: str, port: int) -> None:
        node_dir = self.workdir / str(port)
        node_dir.mkdir(parents=True, exist_ok=True)
        self.processes[port] = subprocess.Popen(
            [
                server,
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--dir", str(node_dir),
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                "--cluster-replica-validity-factor", "0",
                "--save", "",
                "--appendonly", "no",
                "--protected-mode", "no",
                "--logfile", str(node_dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def _all_answer(self, cli: str) -> bool:
        deadline = time.monotonic() + 10
        waiting = set(self.ports)
        while waiting and time.monotonic() < deadline:
            for port in list(waiting):
                if self.processes[port].poll() is not None:
                    return False
                if _cli(cli, port, "ping").strip() == "PONG":
                    waiting.discard(port)
            time.sleep(0.05)
        return not waiting

    def wait_ok(self, cli: str, ports: list[int], timeout: float = 30) -> None:
        """Block until every node in ``ports`` reports ``cluster_state:ok``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all("cluster_state:ok" in _cli(cli, p, "cluster", "info") for p in ports):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the cluster on ports {ports} did not reach cluster_state:ok")

    def _wait_replicas_synced(self, cli: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            roles = [_cli(cli, p, "info", "replication") for p in self.ports]
            replicas = [r for r in roles if "role:slave" in r]
            if len(replicas) == NODES // 2 and all("master_link_status:up" in r for r in replicas):
                return
            time.sleep(0.1)
        raise RuntimeError("the cluster's replicas did not finish their first sync")

    def primaries(self) -> list[int]:
        """Ports of the live nodes that are primaries now."""
        binaries = cluster_binaries()
        assert binaries is not None
        return [
            p
            for p in self.ports
            if self.processes[p].poll() is None
            and "role:master" in _cli(binaries[1], p, "info", "replication")
        ]

    def kill_primary(self, port: int) -> None:
        """SIGKILL the node on ``port`` (no shutdown, no save): its replica takes over."""
        self.processes[port].send_signal(signal.SIGKILL)
        self.processes[port].wait(timeout=10)

    def replica_of(self, port: int) -> int:
        """The port of the live replica of the primary on ``port``."""
        binaries = cluster_binaries()
        assert binaries is not None
        for p in self.ports:
            if p != port and self.processes[p].poll() is None:
                info = _cli(binaries[1], p, "info", "replication")
                if "role:slave" in info and f"master_port:{port}" in info.split():
                    return p
        raise RuntimeError(f"no live replica of the primary on port {port}")

    def allow_failover(self, replica: int, allowed: bool) -> None:
        """Let the replica on ``replica`` take over when its primary fails, or not
        (``cluster-replica-no-failover``): a test holds a killed primary's slots unserved while
        it observes the outage, then lets the failover happen."""
        binaries = cluster_binaries()
        assert binaries is not None
        value = "no" if allowed else "yes"
        done = _cli(binaries[1], replica, "config", "set", "cluster-replica-no-failover", value)
        assert done.strip() == "OK", f"CONFIG SET on port {replica} answered {done!r}"

    def wait_failover(self, timeout: float = 30) -> None:
        """Block until the surviving nodes report ``cluster_state:ok`` again."""
        binaries = cluster_binaries()
        assert binaries is not None
        alive = [p for p in self.ports if self.processes[p].poll() is None]
        self.wait_ok(binaries[1], alive, timeout)

    def restart(self, port: int, timeout: float = 30) -> None:
        """Start the killed node on ``port`` again (its ``nodes.conf`` kept) and wait until it is
        a synced replica: a primary that failed over rejoins as its heir's replica."""
        binaries = cluster_binaries()
        assert binaries is not None
        self._start_node(binaries[0], port)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                info = _cli(binaries[1], port, "info", "replication")
                if "role:slave" in info and "master_link_status:up" in info:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"the restarted node on port {port} did not sync as a replica")

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.processes.values():
            proc.wait(timeout=10)
        self.processes.clear()


def _node(port: int) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)


def _response_error() -> type[Exception]:
    from redis.exceptions import ResponseError

    return ResponseError


@dataclass
class SlotMove:
    """One hash slot moved from the primary on ``source`` to the one on ``target``, as
    ``redis-cli --cluster reshard`` does it, but with the order of the keys in the caller's hands."""

    slot: int
    source: int
    target: int
    ports: Sequence[int]

    def _id(self, port: int) -> str:
        return str(_node(port).execute_command("CLUSTER", "MYID").decode())

    def begin(self) -> None:
        """Mark the slot importing on the target, then migrating on the source."""
        _node(self.target).execute_command(
            "CLUSTER", "SETSLOT", self.slot, "IMPORTING", self._id(self.source)
        )
        _node(self.source).execute_command(
            "CLUSTER", "SETSLOT", self.slot, "MIGRATING", self._id(self.target)
        )

    def keys(self) -> list[bytes]:
        """The keys of the slot still on the source."""
        node = _node(self.source)
        count = node.execute_command("CLUSTER", "COUNTKEYSINSLOT", self.slot)
        return list(node.execute_command("CLUSTER", "GETKEYSINSLOT", self.slot, max(count, 1)))

    def migrate(self, keys: Sequence[bytes]) -> None:
        """``MIGRATE`` ``keys`` (those still on the source) to the target, atomically per call."""
        if keys:
            _node(self.source).execute_command(
                "MIGRATE", "127.0.0.1", self.target, "", 0, 10000, "KEYS", *keys
            )

    def finish(self) -> None:
        """Assign the slot to the target on every live primary (target first, as redis-cli does)."""
        target = self._id(self.target)
        for port in [
            self.target,
            self.source,
            *[p for p in self.ports if p not in (self.target, self.source)],
        ]:
            with contextlib.suppress(_response_error()):  # a replica refuses; the bus tells it
                _node(port).execute_command("CLUSTER", "SETSLOT", self.slot, "NODE", target)


@dataclass
class LocalPair:
    """A standalone ``redis-server`` primary and one replica of it (``--replicaof``) under
    ``workdir``; ``pause_replica`` SIGSTOPs the replica (it acknowledges nothing) until
    ``resume_replica``."""

    workdir: Path
    ports: list[int] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self, timeout: float = 30) -> None:
        binaries = cluster_binaries()
        assert binaries is not None, "redis-server and redis-cli are needed"
        self.ports = _free_ports(2)
        for i, port in enumerate(self.ports):
            extra = ["--replicaof", "127.0.0.1", str(self.ports[0])] if i else []
            self.processes.append(
                subprocess.Popen(
                    [
                        binaries[0],
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        str(self.workdir),
                        *extra,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                if "master_link_status:up" in _cli(
                    binaries[1], self.ports[1], "info", "replication"
                ):
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the replica of the private Redis pair did not sync")

    def pause_replica(self) -> None:
        self.processes[1].send_signal(signal.SIGSTOP)

    def resume_replica(self) -> None:
        self.processes[1].send_signal(signal.SIGCONT)

    def stop(self) -> None:
        for proc in self.processes:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        for proc in self.processes:
            proc.wait(timeout=10)
        self.processes.clear()
