"""The usage tests' local OpenAI-compatible provider (:class:`tests.usage.provider.FakeProvider`)
in a process of its own, keeping its connections alive, as a real provider is served: for benches
that time a model call from the client's side.

In the bench's own process the provider's request threads share the client's interpreter lock,
and its default HTTP/1.0 closes the connection after each answer, so every call pays a new TCP
connection and a new server thread: about a millisecond of provider work inside each timed call,
and noise from the two sharing one interpreter. Here the provider answers over HTTP/1.1 keep-alive
(with Nagle's delay off, so a response's header and body writes do not wait for the client's ACK)
from another process. Use: ``with ProviderProcess() as provider: provider.base_url``.
"""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType


class ProviderProcess:
    """A :class:`~tests.usage.provider.FakeProvider` served by a child process (module docs)."""

    def __init__(self) -> None:
        self.base_url = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> ProviderProcess:
        cmd = [sys.executable, "-m", "bench.provider_process"]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("http://"):
            self._proc.kill()
            raise RuntimeError(
                f"`python -m bench.provider_process` did not print its URL (it printed {line!r}): "
                "run it by hand from the repository's root to see why"
            )
        self.base_url = line
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()


def serve() -> None:
    """Serve a keep-alive provider until killed; its base URL is the first line printed."""
    from tests.usage.provider import FakeProvider

    provider = FakeProvider()
    handler = provider.server.RequestHandlerClass
    handler.protocol_version = "HTTP/1.1"  # type: ignore[attr-defined]
    handler.disable_nagle_algorithm = True  # type: ignore[attr-defined]
    print(provider.base_url, flush=True)
    provider.server.serve_forever()


if __name__ == "__main__":
    serve()
