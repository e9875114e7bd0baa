"""A throwaway Bolt server for tests: ArcadeDB (``arcadedb-embedded``) with its Bolt plugin.

No Neo4j server is installable everywhere, but ``arcadedb-embedded`` ships ArcadeDB and its own
JRE; its server speaks Bolt (protocol 4) to the official ``neo4j`` driver. The server runs in a
*child process* (the JVM stays out of the caller's process, and ArcadeDB's ``./log`` folder
lands in ``workdir``), bound to loopback on free ports, with one database created::

    with arcadedb_bolt_server(tmp_dir) as srv:
        driver = neo4j.GraphDatabase.driver(srv.uri, auth=srv.auth)
        driver.session(database=srv.database) ...

Start-up takes a few seconds (JVM); :class:`BoltServerUnavailable` says why it could not start.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_SCRIPT = r"""
import os, signal, sys, time
from arcadedb_embedded.server import ArcadeDBServer
bolt, http, root, database = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
server = ArcadeDBServer(
    root_path=os.path.join(root, "databases"),
    root_password=os.environ["KGR_ARCADEDB_PASSWORD"],
    config={"http_port": http, "host": "127.0.0.1", "bolt_port": bolt,
            "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin"},
    jvm_kwargs={"heap_size": os.environ.get("KGR_ARCADEDB_HEAP", "512m")},
)
server.start()
server.create_database(database)
def _stop(*_):
    server.stop()
    os._exit(0)
signal.signal(signal.SIGTERM, _stop)
signal.signal(signal.SIGINT, _stop)
print("KGR-READY", flush=True)
while True:
    time.sleep(0.5)
"""


class BoltServerUnavailable(RuntimeError):
    """The test server could not start (package missing, JVM failure, timeout)."""


@dataclass
class BoltServer:
    uri: str
    auth: tuple[str, str]
    database: str
    process: subprocess.Popen
    log: Path

    def stop(self, timeout: float = 20.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_arcadedb_bolt(
    workdir: str | Path, *, database: str = "kgtest", timeout: float = 90.0
) -> BoltServer:
    """Start the server in ``workdir``; return once the Bolt port accepts connections."""
    try:
        import arcadedb_embedded  # noqa: F401
    except ImportError as exc:
        raise BoltServerUnavailable(f"arcadedb-embedded is not installed ({exc})") from None
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    bolt, http = free_port(), free_port()
    password = "kgr-" + secrets.token_hex(8)
    log = workdir / "arcadedb-server.log"
    env = dict(os.environ, KGR_ARCADEDB_PASSWORD=password)
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT, str(bolt), str(http), str(workdir), database],
            cwd=workdir,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:]
            raise BoltServerUnavailable(f"ArcadeDB exited with code {proc.returncode}: {tail}")
        if b"KGR-READY" in log.read_bytes():
            try:
                with socket.create_connection(("127.0.0.1", bolt), timeout=1):
                    return BoltServer(f"bolt://127.0.0.1:{bolt}", ("root", password), database, proc, log)
            except OSError:
                pass
        time.sleep(0.2)
    proc.kill()
    proc.wait(5)
    raise BoltServerUnavailable(f"ArcadeDB did not open its Bolt port within {timeout:.0f} s (log: {log})")


@contextmanager
def arcadedb_bolt_server(workdir: str | Path, **kw) -> Iterator[BoltServer]:
    server = start_arcadedb_bolt(workdir, **kw)
    try:
        yield server
    finally:
        server.stop()
