"""A local OpenAI-compatible chat-completions server for the judge client tests.

``FakeServer`` listens on 127.0.0.1 (a random free port) in a thread and answers
``POST /v1/chat/completions`` from a script: a list of actions taken one per request
(``("status", 429)``, ``("sleep", 2.0)``, ``("content", "...")``, ``("redirect", URL)`` — a 302
to ``URL``, ``("trickle", seconds)`` — a 200 whose body arrives one byte every 0.1 s for that
long, ``("echo_header", name)`` — content is that request header's value,
``("error_echo_header", name)`` — a 400 whose body holds that header's value); after the script runs
out it answers with ``default`` content. It records every request body and header.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeServer:
    def __init__(self, default: Any = None, *, prompt_tokens: int = 100, completion_tokens: int = 20):
        self.script: list[tuple[str, Any]] = []
        self.default = default if default is not None else {"verdict": "correct"}
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.prompt_tokens, self.completion_tokens = prompt_tokens, completion_tokens
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    action = server.script.pop(0) if server.script else ("content", None)
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                self._counted = True
                try:
                    if self.path != "/v1/chat/completions":
                        self._send(404, {"error": "not found"})
                        return
                    kind, arg = action
                    if kind == "sleep":
                        time.sleep(arg)
                        kind, arg = "content", None
                    if kind == "status":
                        headers = {"Retry-After": "0"} if arg == 429 else {}
                        self._send(arg, {"error": {"message": f"status {arg}"}}, headers)
                        return
                    if kind == "redirect":
                        self._uncount()
                        self.send_response(302)
                        self.send_header("Location", arg)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    if kind == "trickle":
                        self._uncount()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(10**6))
                        self.end_headers()
                        stop = time.monotonic() + arg
                        try:
                            while time.monotonic() < stop:
                                self.wfile.write(b" ")
                                self.wfile.flush()
                                time.sleep(0.1)
                        except (BrokenPipeError, ConnectionResetError, OSError):
                            pass
                        return
                    if kind == "error_echo_header":
                        self._send(400, {"error": {"message": f"bad key {self.headers.get(arg)}"}})
                        return
                    if kind == "echo_header":
                        kind, arg = (
                            "content",
                            json.dumps(
                                {"verdict": "correct", "rationale": f"you sent {self.headers.get(arg)}"}
                            ),
                        )
                    if kind == "raw":  # a 200 response with this JSON body
                        self._send(200, arg)
                        return
                    if kind == "delay":  # slow but successful
                        time.sleep(arg)
                        arg = None
                    content = arg if arg is not None else server.default
                    if content == "echo":  # the last message's content, to check result order
                        content = body["messages"][-1]["content"]
                    if not isinstance(content, str):
                        content = json.dumps(content)
                    self._send(
                        200,
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "model": body.get("model"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": server.prompt_tokens,
                                "completion_tokens": server.completion_tokens,
                                "total_tokens": server.prompt_tokens + server.completion_tokens,
                            },
                        },
                    )
                finally:
                    self._uncount()

            def _uncount(self) -> None:
                # A request stops being active before its response is written: the client may
                # send its next request as soon as it reads this one, before this thread returns.
                if getattr(self, "_counted", False):
                    self._counted = False
                    with server.lock:
                        server.active -= 1

            def _send(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self._uncount()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
