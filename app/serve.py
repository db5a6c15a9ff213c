"""``pfscope serve``: gunicorn embedded through its application API, the app factory in each worker.

One code path for every way of serving: the console (``pfscope serve``), the ``Procfile``
(which runs ``pfscope serve``) and systemd. The settings are checked before any socket is opened
(the credentials rule: one line, exit status 2); each worker builds its own app with
:func:`app.main.create_app`, so nothing is shared between workers but the file (or Redis) cache.

With a certificate and key (``--certfile``/``--keyfile``) gunicorn serves HTTPS itself (and
``--dev``, Flask's server, with ``ssl_context``); the listening line then says ``https://``.

SIGTERM stops gracefully (requests in flight finish, at most ``GRACEFUL_SECONDS``), SIGINT
(Ctrl-C) at once; both exit 0. Flask's development server runs only with ``--dev``.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from gunicorn.app.base import BaseApplication

from pfscope.app.settings import Settings

GRACEFUL_SECONDS = 10
#: a first visit of a folder at 100,000 folders reads several tables: well under this, even loaded
TIMEOUT_SECONDS = 120
#: a connection reaches a worker once its request has arrived, or after this long. Chromium opens
#: sockets it sends nothing on (preconnect; it closes one unused after 10 s), and a sync worker
#: that accepts one waits on it until gunicorn's time-out kills the worker: two such sockets held
#: both workers of a server for over 40 s. Linux's TCP_DEFER_ACCEPT (nginx's ``listen ...
#: deferred``) keeps them in the kernel. Threads (gthread) would park them too, but cost the
#: demo's 20 users a quarter more server CPU per callback and twice the p95 (docs/performance.md)
DEFER_ACCEPT_SECONDS = 30


def listening_line(settings: Settings, workers: int | None) -> str:
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    how = f"{workers} worker{'s' if workers != 1 else ''}" if workers else "Flask development server"
    auth = ", HTTP Basic auth" if settings.auth_required else ""
    return (
        f"pfscope: serving {settings.data_dir} on {settings.scheme}://{host}:{settings.port}/ ({how}{auth})"
    )


class PfscopeServer(BaseApplication):
    """gunicorn with pfscope's configuration; ``load()`` runs the app factory in each worker."""

    def __init__(self, settings: Settings, workers: int, access_log: str | None = None):
        self.settings = settings
        self.workers = workers
        self.access_log = access_log
        super().__init__()

    def load_config(self) -> None:
        host = f"[{self.settings.host}]" if ":" in self.settings.host else self.settings.host
        line = listening_line(self.settings, self.workers)

        def when_ready(arbiter: Any) -> None:  # after the socket is bound, before any worker
            defer_accept(arbiter.LISTENERS)
            print(line, flush=True)

        options: dict[str, Any] = {
            "bind": f"{host}:{self.settings.port}",
            "workers": self.workers,
            "worker_class": "sync",
            "timeout": TIMEOUT_SECONDS,
            "graceful_timeout": GRACEFUL_SECONDS,
            "keepalive": 5,
            "loglevel": "warning",  # the one line above, then only problems
            "errorlog": "-",
            "accesslog": self.access_log,
            "proc_name": "pfscope-serve",
            "when_ready": when_ready,
            "forwarded_allow_ips": os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1"),
        }
        if self.settings.tls:
            options["certfile"] = str(self.settings.certfile)
            options["keyfile"] = str(self.settings.keyfile)
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from pfscope.app.main import create_app

        return create_app(self.settings).server


def defer_accept(listeners: Any) -> None:
    """Hand the workers only connections that have sent something (``DEFER_ACCEPT_SECONDS``);
    a no-op where the system has no TCP_DEFER_ACCEPT (not Linux)."""
    option = getattr(socket, "TCP_DEFER_ACCEPT", None)
    if option is None:
        return
    for listener in listeners:
        listener.setsockopt(socket.IPPROTO_TCP, option, DEFER_ACCEPT_SECONDS)


def serve(settings: Settings, *, workers: int, dev: bool = False, access_log: str | None = None) -> int:
    """Serve until SIGTERM or Ctrl-C; the exit status (0 after a clean stop)."""
    if dev:
        from pfscope.app.main import create_app

        app = create_app(settings)
        print(listening_line(settings, None), flush=True)
        tls = (str(settings.certfile), str(settings.keyfile)) if settings.tls else None
        app.run(host=settings.host, port=settings.port, debug=False, ssl_context=tls)
        return 0
    try:
        PfscopeServer(settings, workers, access_log).run()
    except SystemExit as e:  # the arbiter exits through sys.exit
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
