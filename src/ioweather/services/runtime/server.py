"""The dashboard's server lifecycle behind `ioweather serve` and `ioweather watch`: a listening
socket (or one line saying why not), uvicorn in a daemon thread, Ctrl-C/SIGTERM, a bounded stop.

Takes any ASGI application (web/app.py builds it), so it imports nothing of the web layer.
"""

from __future__ import annotations

import copy
import errno
import ipaddress
import socket
import threading
import time
from collections.abc import Callable

from ioweather import signals
from ioweather.errors import UserError, os_error_reason


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a one-line error (port in use, bad address) instead of uvicorn's exit."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UserError(f"cannot resolve --host {host!r}: {e.strerror}") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise UserError(f"port {port} on {host} is already in use; choose another with --port") from None
        raise UserError(f"cannot listen on {host}:{port}: {os_error_reason(e)}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}/"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(name: str) -> str:
    """`name` as the Host header carries it: an IPv6 literal in brackets, lower case."""
    name = name.strip().lower()
    try:
        if ipaddress.ip_address(name.strip("[]")).version == 6:
            return f"[{name.strip('[]')}]"
    except ValueError:
        pass
    return name


def allowed_hosts(host: str, extra=()) -> list[str]:
    """The Host header names the dashboard answers: loopback, the --host it listens on and `extra`
    (--allowed-host, e.g. a reverse proxy's public name). Listening on every address adds this
    machine's own names; any other name (a numeric address of this machine too) must be given."""
    names = ["127.0.0.1", "localhost", "::1", host, *extra]
    if host in ("0.0.0.0", "::", ""):
        names += [socket.gethostname(), socket.getfqdn()]
    # Starlette's patterns: a name, "*.domain", or "*" (any name, for a proxy that checks Host itself).
    bad = [n for n in extra if not n.strip() or "*" in n.strip()[1:] or n.startswith("*") and n not in ("*",)
           and not n.startswith("*.")]
    if bad:
        raise UserError(f"--allowed-host {bad[0]!r}: give a host name, an address or a pattern like *.example.org")
    return list(dict.fromkeys(_host_name(n) for n in names if n not in ("0.0.0.0", "::", "")))


#: Timestamps on every line (local time with its UTC offset, as syslog readers expect), and uvicorn's own
#: access-log format after them: `2026-03-02 10:00:01+0100 INFO:     127.0.0.1:5678 - "GET / HTTP/1.1" 200`.
LOG_TIME = "%(asctime)s "
LOG_DATEFMT = "%Y-%m-%d %H:%M:%S%z"


def _log_config(quiet: bool = False) -> dict:
    """uvicorn's logging configuration with timestamps; quiet: warnings and errors only, no access log."""
    # lazy: uvicorn: as in run_server
    from uvicorn.config import LOGGING_CONFIG

    cfg = copy.deepcopy(LOGGING_CONFIG)
    for f in cfg["formatters"].values():
        f["fmt"] = LOG_TIME + f["fmt"]
        f["datefmt"] = LOG_DATEFMT
    level = "WARNING" if quiet else "INFO"
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        cfg["loggers"][name]["level"] = level
    return cfg


#: How long a stop waits for requests in flight before it abandons them (they only read).
GRACE_S = 3
#: How long the app's shutdown may take when it runs beside an abandoned request (`run_server`'s `shutdown`):
#: writing a month of 100 targets' kept rollups is ~1-2 s; a shutdown waiting on that request's lock is left.
SHUTDOWN_S = 60


def run_server(app, sock: socket.socket, stop: threading.Event, say: Callable[[str], None],
               quiet: bool = False, shutdown: Callable[[], None] | None = None) -> None:
    """Serve until Ctrl-C/SIGTERM or until `stop` is set (e.g. the probe died), then wait at most
    GRACE_S for requests in flight; a second Ctrl-C does not wait at all. The log has timestamps and
    uvicorn's standard access log (one line per request on stdout); `quiet` keeps warnings only.

    uvicorn runs in a daemon thread while the main thread keeps the signals. Run in the main
    thread, it handed sync endpoints to AnyIO worker threads, which are not daemons: a request
    still running at the stop (a /metrics scrape waiting on a locked PostgreSQL table, a long
    page) kept the process alive after "stopped" until it finished, so that it took a second
    Ctrl-C to end. Threads inherit daemon status from the thread that starts them, so the
    workers of a daemon event loop cannot hold the process. A request still running after
    GRACE_S is abandoned, not cancelled: uvicorn would log the cancellation as a traceback.

    uvicorn runs the app's lifespan shutdown only after every request has ended: an abandoned request skipped
    it, and with it what the dashboard keeps across a restart (the probe's rollups and baselines: the next
    start rebuilt a month of rollups, issue 40). `shutdown` (the app's, safe to call twice) is then run here,
    for at most SHUTDOWN_S, beside the abandoned request.
    """
    # lazy: uvicorn: kept off `export --help` (commands/export.py imports is_loopback from here)
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_config=_log_config(quiet), log_level="warning" if quiet else "info",
                                           access_log=not quiet, lifespan="on", timeout_graceful_shutdown=None))
    failed: list[BaseException] = []

    def on_signal(*_):
        if stop.is_set():
            server.force_exit = True
        stop.set()

    def serve():
        try:
            server.run(sockets=[sock])
        except BaseException as e:  # re-raised by the main thread
            failed.append(e)
        finally:
            stop.set()

    restore = signals.install(on_signal)
    http = threading.Thread(target=serve, name="ioweather-http", daemon=True)
    try:
        http.start()
        # Polled, not stop.wait(): the handler sets `stop`, and Event.wait holds the lock set() takes.
        while not stop.is_set():
            time.sleep(0.1)
        server.should_exit = True
        http.join(timeout=GRACE_S)
        if http.is_alive():
            say(f"ioweather: {len(server.server_state.tasks) or 'a'} request(s) still running after "
                f"{GRACE_S} s abandoned")
            if shutdown is not None:
                _shut_down(shutdown, say)
    finally:
        stop.set()
        restore()
        sock.close()
    if failed:
        raise failed[0]


def _shut_down(shutdown: Callable[[], None], say: Callable[[str], None]) -> None:
    """`shutdown()` in a daemon thread, waited for at most SHUTDOWN_S (an abandoned request may hold what it
    needs); a failure is one line, as the lifespan's would be in uvicorn's log."""
    def run():
        try:
            shutdown()
        except Exception as e:  # noqa: BLE001 - the process is stopping: said, not raised
            say(f"ioweather: shutdown failed: {e}")

    t = threading.Thread(target=run, name="ioweather-shutdown", daemon=True)
    t.start()
    t.join(timeout=SHUTDOWN_S)
    if t.is_alive():
        say(f"ioweather: shutdown still running after {SHUTDOWN_S} s: left")
