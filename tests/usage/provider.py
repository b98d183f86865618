"""A local OpenAI-compatible chat-completions server for the usage tests: it answers every request
(plain or streamed) with a fixed usage, can enforce a request rate as providers do (a token bucket:
429 + Retry-After past it) and records what it saw (times, tenants named in the prompt, tokens)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROMPT_TOKENS = 40
COMPLETION_TOKENS = 60
RETRY_AFTER = 2


class FakeProvider:
    def __init__(self, *, rate: float | None = None, burst: int = 1, reject_first: int = 0) -> None:
        #: The limit it enforces: a token bucket of ``burst`` requests refilled at ``rate`` a second.
        self.rate, self.burst = rate, burst
        self.bucket, self.refilled = float(burst), time.monotonic()
        #: Answer the first requests 429 with ``Retry-After: RETRY_AFTER`` whatever the rate.
        self.reject_first = reject_first
        self.rejected_times: list[float] = []
        self.lock = threading.Lock()
        self.ok_times: list[float] = []
        self.rejected = 0
        self.tokens = 0
        self.tenants: Counter[str] = Counter()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def admit(self, prompt: str) -> bool:
        with self.lock:
            now = time.monotonic()
            if self.rate is not None:
                self.bucket = min(self.burst, self.bucket + (now - self.refilled) * self.rate)
                self.refilled = now
            if (self.rate is not None and self.bucket < 1) or self.reject_first:
                self.reject_first = max(0, self.reject_first - 1)
                self.rejected += 1
                self.rejected_times.append(now)
                return False
            if self.rate is not None:
                self.bucket -= 1
            self.ok_times.append(now)
            self.tokens += PROMPT_TOKENS + COMPLETION_TOKENS
            self.tenants[prompt.split(":")[0]] += 1
            return True

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = body["messages"][-1]["content"]
                if isinstance(content, list):
                    content = "".join(part.get("text", "") for part in content)
                prompt = str(content)
                if not provider.admit(prompt):
                    self._send(
                        429,
                        {"error": {"message": "rate limited", "code": "rate_limit"}},
                        {"Retry-After": str(RETRY_AFTER)},
                    )
                    return
                usage = {
                    "prompt_tokens": PROMPT_TOKENS,
                    "completion_tokens": COMPLETION_TOKENS,
                    "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                }
                if body.get("stream"):
                    self._stream(body["model"], usage)
                    return
                message = {"role": "assistant", "content": "done"}
                choice = {"index": 0, "finish_reason": "stop", "message": message}
                base = {"id": "c1", "created": 0, "model": body["model"]}
                completion = {**base, "object": "chat.completion", "choices": [choice]}
                self._send(200, {**completion, "usage": usage})

            def _stream(self, model: str, usage: dict[str, int]) -> None:
                base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": model}
                delta = {"role": "assistant", "content": "done"}
                chunks = [
                    {**base, "choices": [{"index": 0, "delta": delta}]},
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {**base, "choices": [], "usage": usage},
                ]
                raw = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                raw += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _send(
                self, status: int, data: object, headers: dict[str, str] | None = None
            ) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        return Handler
