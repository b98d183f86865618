"""``SessionWriter``: how one call (or one ``clear_context``) writes its session's state.

Every write carries the version it read, so a concurrent writer gets ``VersionConflict``. With a
lease, each write is fenced by it inside the store (:meth:`~.lease.Lease.fence`; a store without
fenced writes gets one verify read first), and the last write may give the lease back in the same
operation (``release=True``). A write cut short by cancellation may or may not have landed: the next write first
re-reads the record and adopts its version only if the stored state is exactly the one attempted,
so somebody else's write is never overwritten.
"""

from __future__ import annotations

from .. import tracing
from ..errors import VersionConflict
from ..keys import SessionAddress
from ..sessions import SessionSource, SessionStorage
from ..state import AgentState
from .lease import Lease


class SessionWriter:
    """Writes of one session by one holder; ``version`` is the version last read or written."""

    def __init__(
        self,
        sessions: SessionStorage,
        addr: SessionAddress,
        version: int,
        lease: Lease | None,
        *,
        source: SessionSource,
        model: str | None = None,
    ) -> None:
        self.sessions, self.addr, self.version, self.lease = sessions, addr, version, lease
        self.source = source
        #: The model name a session created by this writer records in its config.
        self.model = model
        self._cut_short: str | None = None  # the state of a write whose outcome is unknown

    async def save(self, state: AgentState, *, release: bool = False) -> int:
        """Write ``state``; with ``release`` (the holder's last write, and nothing after it needs
        the lease) a store with fenced writes gives the lease back in the same operation."""
        if self._cut_short is not None:
            self.version = await self._landed(self._cut_short)
            self._cut_short = None
        try:
            self.version = await self._write(state, release=release)
        except VersionConflict:
            raise  # nothing was written: somebody else's write, not ours to overwrite
        except BaseException:
            self._cut_short = state.model_dump_json()  # cancelled mid-write: it may have landed
            raise
        return self.version

    async def _write(self, state: AgentState, *, release: bool) -> int:
        lease, fence = self.lease, None
        if lease is not None and lease.fenced_by_store:
            fence = lease.fence(release=release)
        elif lease is not None:  # a store without fenced writes: one verify read first
            await lease.verify()
        try:
            if self.version == 0:
                new = await self.sessions.insert_at(
                    self.addr, state, model=self.model, source=self.source, fence=fence
                )
            else:
                new = await self.sessions.update_at(
                    self.addr, state, expected_version=self.version, fence=fence
                )
        except VersionConflict as exc:
            tracing.conflict(exc.key)
            if lease is not None:
                lease.lost_by(exc)
            raise
        if lease is not None and fence is not None and fence.release:
            lease.released()
        return new

    async def _landed(self, attempted: str) -> int:
        """The version to write over after a write was cut short: the stored version if the stored
        state is the one attempted, else the version we had (so another writer still conflicts)."""
        record = await self.sessions.get_at(self.addr)
        if record is None or record.version <= self.version:
            return self.version
        return record.version if record.state.model_dump_json() == attempted else self.version
