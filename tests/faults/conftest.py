"""Fixtures of the fault suite: the session's report, the "constant" test plugin, extra API
nodes, and a PostgreSQL proxy that loses the replies of committed statements.

The report is printed at the end of the session and written as JSON and Markdown to
``$TMS_FAULTS_REPORT`` (default: ``faults-report.json`` under pytest's temporary directory).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.faults.report import DEFAULT_REPORT_NAME, REPORT_ENV, FaultReport
from tests.faults.config import VARIANT
from tms.local.ports import free_port
from tms.local.stack import LocalStack, ServiceProcess

PLUGINS = Path(__file__).resolve().parent.parent / "plugins"
REPORT_KEY = pytest.StashKey[FaultReport]()
REPORT_PATH_KEY = pytest.StashKey[Path]()
API_READY_TIMEOUT_S = 60.0
HEALTH_CALL_TIMEOUT_S = 1.0
HEALTH_STEP_S = 0.1

# --- PostgreSQL wire protocol, as much as the proxy needs -----------------------------------
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
READ_CHUNK = 65536
# the commit intake's statement (sql/queries/commits.sql, commits_notify): the write whose
# reply is lost
INTAKE_MARKER = b"INSERT INTO tms_commit_events"
MAX_PASSED_FAILED = 100  # failed doomed statements whose replies are forwarded (_spare)
MODE_CUT = "cut"  # drop the reply, then close the connection at once: the caller sees an error
MODE_HOLD = "hold"  # drop the reply and leave the connection hanging: the caller times out


# --- report ----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def fault_report(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> FaultReport:
    """The session's fault report; every fault test adds its record to it."""
    report = FaultReport(VARIANT)
    request.config.stash[REPORT_KEY] = report
    default = tmp_path_factory.getbasetemp() / DEFAULT_REPORT_NAME
    request.config.stash[REPORT_PATH_KEY] = Path(os.environ.get(REPORT_ENV) or default)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    report = config.stash.get(REPORT_KEY, None)
    if report is None or not report.records:
        return
    terminalreporter.section(f"TMS fault injection ({report.variant})")
    for line in report.summary_lines():
        terminalreporter.write_line(line)
    json_path, md_path = report.write(config.stash[REPORT_PATH_KEY])
    terminalreporter.write_line(f"report: {json_path} and {md_path}")


# --- processes -------------------------------------------------------------------------------

@pytest.fixture
def constant_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The third-party "constant" format (free inspection, a job that fails at once) installed
    for this test and every process it starts."""
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", f"{PLUGINS}{os.pathsep}{old}" if old else str(PLUGINS))


def wait_serving(address: str, timeout_s: float = API_READY_TIMEOUT_S,
                 alive: Callable[[], bool] | None = None) -> float:
    """Seconds until the API at ``address`` reports SERVING (its health follows the
    database); raises after ``timeout_s`` or when ``alive`` says the process died."""
    t0 = time.monotonic()
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                resp = stub.Check(health_pb2.HealthCheckRequest(),
                                  timeout=HEALTH_CALL_TIMEOUT_S)
                if resp.status == health_pb2.HealthCheckResponse.SERVING:
                    return time.monotonic() - t0
            except grpc.RpcError:
                pass
            if alive is not None and not alive():
                raise RuntimeError(f"tms-api at {address} exited")
            if time.monotonic() - t0 > timeout_s:
                raise TimeoutError(f"tms-api at {address} not SERVING after {timeout_s:.0f} s")
            time.sleep(HEALTH_STEP_S)


@dataclass
class ApiNode:
    """One tms-api process of a stack, restartable on its own port."""

    stack: LocalStack
    name: str
    port: int
    database_url: str
    proc: ServiceProcess | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ApiNode:
        env = self.stack._env()  # noqa: SLF001 - the stack's own environment, one URL changed
        env["TMS_DATABASE_URL"] = self.database_url
        logs = self.stack.state_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.proc = ServiceProcess(self.name, [sys.executable, "-m", "tms_services.api",
                                               "--listen", self.address],
                                   logs / f"{self.name}.log", env).start()
        self.stack.services.append(self.proc)  # stopped with the stack
        wait_serving(self.address, alive=lambda: self.proc is not None and self.proc.alive)
        return self

    def kill(self) -> None:
        """SIGKILL, no goodbye: in-flight calls see the connection reset."""
        assert self.proc is not None
        self.proc.kill()
        assert self.proc.proc is not None
        self.proc.proc.wait()


@pytest.fixture
def api_node() -> Callable[..., ApiNode]:
    """Start a tms-api process on ``stack`` (own port; optional other database URL)."""

    def start(stack: LocalStack, name: str, database_url: str | None = None) -> ApiNode:
        return ApiNode(stack, name, free_port(), database_url or stack.database_url).start()

    return start


# --- the lost-reply proxy --------------------------------------------------------------------

@dataclass
class _Conn:
    """Per client connection: prepared statements by name, and whether its reply is doomed."""

    prepared: dict[bytes, bytes] = field(default_factory=dict)
    doomed: bool = False
    saw_error: bool = False
    held: bytearray = field(default_factory=bytearray)  # the doomed statement's reply so far


def _cstrings(body: bytes, n: int) -> list[bytes]:
    out, pos = [], 0
    for _ in range(n):
        end = body.index(b"\0", pos)
        out.append(body[pos:end])
        pos = end + 1
    return out


class LostReplyProxy:
    """A TCP proxy on 127.0.0.1 in front of PostgreSQL that, when armed, forwards the next
    matching statements but swallows PostgreSQL's reply to each.

    The statement runs and (autocommit) commits in PostgreSQL: the proxy waits for the
    server's ReadyForQuery, which comes after the commit, before it acts. Then, in ``cut``
    mode, it closes the connection at once (the caller's driver reports a lost connection), in
    ``hold`` mode it first leaves the connection silent for ``hold_s`` (the caller times out).
    Either way the caller cannot know its write committed: the retry must not count it twice.

    Only as much of the wire protocol is parsed as that needs: message framing, Parse / Bind /
    Query for the statement text (prepared statements are remembered by name), ErrorResponse
    and ReadyForQuery. SSL and GSS encryption requests are refused by the proxy itself.
    """

    def __init__(self, upstream_port: int, marker: bytes = INTAKE_MARKER) -> None:
        self.upstream_port = upstream_port
        self.marker = marker
        self.port = 0
        self.lock = threading.Lock()
        self.armed = 0
        self.mode = MODE_CUT
        self.hold_s = 0.0
        self.matched = 0  # matching statements seen
        self.doomed = 0  # matching statements whose reply was taken
        self.swallowed_committed = 0  # ... that PostgreSQL completed without error
        self.swallowed_failed = 0
        self.passed_failed = 0  # doomed statements that failed, their reply forwarded after all
        self.released_at: list[float] = []  # monotonic: when each doomed connection was cut
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="pg-lost-reply-proxy")
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> LostReplyProxy:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        self.port = fut.result(10)
        return self

    def dsn(self, dbname: str, user: str = "postgres") -> str:
        return (f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"
                "?sslmode=disable&gssencmode=disable")

    def arm(self, count: int, mode: str = MODE_CUT, hold_s: float = 0.0) -> None:
        with self.lock:
            self.armed, self.mode, self.hold_s = count, mode, hold_s

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for t in list(self._tasks):
                t.cancel()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    async def _listen(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, creader: asyncio.StreamReader,
                     cwriter: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            sreader, swriter = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            cwriter.close()
            self._tasks.discard(task)  # type: ignore[arg-type]
            return
        conn = _Conn()
        pumps = [asyncio.ensure_future(self._client_to_server(conn, creader, cwriter, swriter)),
                 asyncio.ensure_future(self._server_to_client(conn, sreader, cwriter))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the proxy is stopping: close both sides below, quietly
        finally:
            for p in pumps:
                p.cancel()
            for w in (cwriter, swriter):
                w.close()
            self._tasks.discard(task)  # type: ignore[arg-type]

    def _inspect(self, conn: _Conn, msg: bytes) -> None:
        kind, body = msg[:1], msg[5:]
        query = None
        if kind == b"P":
            name, text = _cstrings(body, 2)
            conn.prepared[name] = text
        elif kind == b"B":
            _, name = _cstrings(body, 2)
            query = conn.prepared.get(name, b"")
        elif kind == b"Q":
            (query,) = _cstrings(body, 1)
        if query is None or self.marker not in query:
            return
        with self.lock:
            self.matched += 1
            if self.armed > 0 and not conn.doomed:
                self.armed -= 1
                self.doomed += 1
                conn.doomed = True

    async def _client_to_server(self, conn: _Conn, reader: asyncio.StreamReader,
                                cwriter: asyncio.StreamWriter,
                                swriter: asyncio.StreamWriter) -> None:
        buf = b""
        started = False
        while data := await reader.read(READ_CHUNK):
            buf += data
            out = bytearray()
            while True:
                if not started:  # untyped: [length][code or protocol version]...
                    if len(buf) < 8 or len(buf) < int.from_bytes(buf[:4], "big"):
                        break
                    n = int.from_bytes(buf[:4], "big")
                    msg, buf = buf[:n], buf[n:]
                    if int.from_bytes(msg[4:8], "big") in (SSL_REQUEST, GSSENC_REQUEST):
                        cwriter.write(b"N")  # no encryption here; the client goes on in clear
                        await cwriter.drain()
                        continue
                    started = True
                    out += msg
                    continue
                if len(buf) < 5 or len(buf) < 1 + int.from_bytes(buf[1:5], "big"):
                    break
                n = 1 + int.from_bytes(buf[1:5], "big")
                msg, buf = buf[:n], buf[n:]
                self._inspect(conn, msg)  # decides before the statement reaches the server
                out += msg
            if out:
                swriter.write(bytes(out))
                await swriter.drain()

    async def _server_to_client(self, conn: _Conn, reader: asyncio.StreamReader,
                                cwriter: asyncio.StreamWriter) -> None:
        buf = b""
        while data := await reader.read(READ_CHUNK):
            buf += data
            out = bytearray()
            while len(buf) >= 5 and len(buf) >= 1 + int.from_bytes(buf[1:5], "big"):
                n = 1 + int.from_bytes(buf[1:5], "big")
                msg, buf = buf[:n], buf[n:]
                if not conn.doomed:
                    out += msg
                    continue
                if msg[:1] == b"E":
                    conn.saw_error = True
                conn.held += msg
                if msg[:1] == b"Z":  # ReadyForQuery: the statement (and its commit) is done
                    if conn.saw_error and self._spare(conn):
                        out += conn.held  # nothing was written: not the fault; the reply goes on
                        conn.held = bytearray()
                        continue
                    if out:
                        cwriter.write(bytes(out))
                    await self._let_go(conn)
                    return
            if out:
                cwriter.write(bytes(out))
                await cwriter.drain()

    def _spare(self, conn: _Conn) -> bool:
        """A doomed statement that failed wrote nothing, so losing its reply is not the fault
        this proxy makes (a write that committed): its reply is forwarded and the next matching
        statement is doomed instead (the intake's plain INSERT fails on a commit already stored
        and falls back to the statement that skips it). At most MAX_PASSED_FAILED times, so a
        caller that keeps failing cannot defer the fault for ever."""
        with self.lock:
            if self.passed_failed >= MAX_PASSED_FAILED:
                return False
            self.passed_failed += 1
            self.armed += 1
            self.doomed -= 1
        conn.doomed = conn.saw_error = False
        return True

    async def _let_go(self, conn: _Conn) -> None:
        with self.lock:
            if conn.saw_error:
                self.swallowed_failed += 1
            else:
                self.swallowed_committed += 1
            mode, hold_s = self.mode, self.hold_s
        if mode == MODE_HOLD and hold_s > 0:
            await asyncio.sleep(hold_s)
        with self.lock:
            self.released_at.append(time.monotonic())


@pytest.fixture
def lost_reply_proxy() -> Iterator[Callable[[int], LostReplyProxy]]:
    """Start a :class:`LostReplyProxy` in front of the PostgreSQL on the given port."""
    started: list[LostReplyProxy] = []

    def start(upstream_port: int) -> LostReplyProxy:
        proxy = LostReplyProxy(upstream_port).start()
        started.append(proxy)
        return proxy

    yield start
    for p in started:
        p.stop()
