"""The dashboard's app factory: ``create_app(settings)``; ``server()`` for gunicorn.

No I/O at import: the Dash app, its cache and its auth are built by the factory.
Every route asks for HTTP Basic auth when credentials are configured (required off loopback).
"""

from __future__ import annotations

import base64
import hmac
import json
import sys
from pathlib import Path
from typing import Any

import dash
import pandas as pd
from dash import dcc, html
from flask import Flask, Response, request
from flask_caching import Cache

from pfscope.app import components
from pfscope.app.chain import read_record, refresh_text
from pfscope.app.compression import install_compression
from pfscope.app.lazy_grid import defer_ag_grid
from pfscope.app.metrics import install_metrics_route
from pfscope.app.plotly_bundle import serve_cartesian_plotly
from pfscope.app.runtime import EXTENSION, current_data, settings
from pfscope.app.settings import Settings, SettingsError, load_settings
from pfscope.spark_jobs.model.errors import ExitStatus

HERE = Path(__file__).resolve().parent


def assets_folder() -> Path:
    """The folder Dash serves under ``/assets/`` (stylesheet, scripts, icon), found from the package,
    never the working directory: ``app/assets`` in an installed wheel (pyproject.toml maps the
    repository's top-level ``assets/`` there), else the checkout's ``assets/`` beside ``app/``
    (a source tree, an editable install)."""
    installed = HERE / "assets"
    return installed if installed.is_dir() else HERE.parent / "assets"


INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
{%metas%}
<title>{%title%}</title>
<link rel="icon" type="image/svg+xml" href="/assets/favicon.svg">
{%css%}
</head>
<body>
{%app_entry%}
<footer>{%config%}{%scripts%}{%renderer%}</footer>
</body>
</html>"""


def cache_config(settings: Settings) -> dict[str, Any]:
    """Redis when a URL is configured, else a file cache every gunicorn worker shares."""
    if settings.redis_url:
        return {
            "CACHE_TYPE": "RedisCache",
            "CACHE_REDIS_URL": settings.redis_url,
            "CACHE_DEFAULT_TIMEOUT": settings.cache_timeout,
            "CACHE_KEY_PREFIX": "pfscope:",
        }
    return {
        "CACHE_TYPE": "FileSystemCache",
        "CACHE_DIR": str(settings.cache_dir),
        "CACHE_THRESHOLD": 20_000,
        "CACHE_DEFAULT_TIMEOUT": settings.cache_timeout,
    }


def _authorised(settings: Settings, header: str | None) -> bool:
    if not header or not header.startswith("Basic "):
        return False
    try:
        user, _, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    ok_user = hmac.compare_digest(user.encode(), (settings.user or "").encode())
    ok_password = hmac.compare_digest(password.encode(), (settings.password or "").encode())
    return ok_user and ok_password


def _install_auth(server: Flask, settings: Settings) -> None:
    @server.before_request
    def _basic_auth() -> Response | None:
        if _authorised(settings, request.headers.get("Authorization")):
            return None
        return Response("pfscope: credentials required\n", 401, {"WWW-Authenticate": 'Basic realm="pfscope"'})


def _install_latest_route(server: Flask) -> None:
    """``/latest.json``: the run the dashboard serves now (the auto-refresh switch polls it)."""

    @server.route("/latest.json")
    def _latest() -> Response:
        data = current_data()
        body = {"run_id": data.run_id if data is not None else None}
        return Response(
            json.dumps(body), 200, {"Content-Type": "application/json", "Cache-Control": "no-store"}
        )


def _install_report_route(server: Flask) -> None:
    """``/report?fid=&at=``: the standalone report of the view, the same bytes ``pfscope report`` writes."""

    @server.route("/report")
    def _report() -> Response:
        from pfscope.app.report import ReportError, report_download

        data = current_data()
        if data is None:
            return Response(
                "pfscope: no run is published yet\n", 404, {"Content-Type": "text/plain; charset=utf-8"}
            )
        try:
            payload = report_download(
                data, fid=request.args.get("fid") or None, at=request.args.get("at") or None
            )
        except ReportError as e:  # a helpful page; everything from the URL is escaped
            from pfscope.app.report.not_found import report_error_page

            status, page = report_error_page(
                data, request.args.get("fid") or None, request.args.get("at"), str(e)
            )
            return Response(page, status, {"Content-Type": "text/html; charset=utf-8"})
        return Response(
            payload["content"],
            200,
            {
                "Content-Type": "text/html; charset=utf-8",
                "Content-Disposition": f'attachment; filename="{payload["filename"]}"',
            },
        )


def _install_plan_report_route(server: Flask) -> None:
    """``/plan-report?run=&action=...``: the ``/plan`` page's plan as a standalone report."""

    @server.route("/plan-report")
    def _plan_report() -> Response:
        from pfscope.app.figures.plan import actions_of
        from pfscope.app.report.plan import plan_report_response
        from pfscope.app.runtime import settings

        data = current_data()
        if data is None:
            return Response(
                "pfscope: no run is published yet\n", 404, {"Content-Type": "text/plain; charset=utf-8"}
            )
        status, page, filename = plan_report_response(
            settings().data_dir,
            data.run_id,
            actions_of(request.args.getlist("action")),
            request.args.get("run"),
        )
        headers = {"Content-Type": "text/html; charset=utf-8"}
        if filename:
            headers["Content-Disposition"] = f'attachment; filename="{filename}"'
        return Response(page, status, headers)


#: Dash's catch-all view: every page address is answered by it (with the same index HTML)
_CATCHALL = "/<path:path>"


def page_exists(path: str) -> bool:
    """Whether ``path`` is a page of the dashboard, and for a folder or store page, whether the run
    has that folder or store (nothing published yet: every page exists, it says so)."""
    import re
    from urllib.parse import unquote

    path = "/" + path.strip("/")
    for page in dash.page_registry.values():
        template = page.get("path_template")
        if template:
            pattern = "^" + re.sub(r"<([a-z_]+)>", r"(?P<\1>[^/]+)", template) + "$"
            m = re.match(pattern, path)
            if not m:
                continue
            data = current_data()
            if data is None:
                return True
            if "fid" in m.groupdict():
                return data.folder(unquote(m["fid"])) is not None
            if "name" in m.groupdict():
                return unquote(m["name"]) in set(data.stores()["store"])
            return True
        if page.get("path") == path and page.get("module", "").split(".")[-1] != "not_found_404":
            return True
    return False


def _install_not_found_status(server: Flask) -> None:
    """An address that is no page (or a folder or store the run lacks) answers 404 with the helpful page."""

    @server.after_request
    def _status(response: Response) -> Response:
        if request.endpoint == _CATCHALL and response.status_code == 200 and not page_exists(request.path):
            response.status_code = 404
        return response


def _shell() -> html.Div:
    """The frame around every page: navbar (with the run shown) and the page container."""
    data = current_data()
    as_of = run_id = age = None
    notice: str | None = None
    if data is not None:
        from pfscope.app.figures import fmt_age, fmt_time
        from pfscope.app.figures.older_run import older_run_notice

        stamp = data.summary().get("as_of")
        as_of = fmt_time(stamp)
        run_id = data.run_id
        if as_of:  # how old the data is, now: a run finished a minute ago can hold week-old mail
            age = fmt_age(
                (pd.Timestamp.now(tz="UTC") - pd.Timestamp(stamp).tz_convert("UTC")).total_seconds()
            )
        notice = older_run_notice(data.missing())
    record = read_record(Path(settings().data_dir))  # DIR/published of a pfscope refresh --out DIR
    return html.Div(
        [
            dcc.Location(id="pf-nav-location", refresh="callback-nav"),
            html.A("Skip to content", href="#pf-content", className="pf-skip"),
            components.navbar(as_of, run_id, age, refresh_text(record) if record else None),
            html.Div(notice, role="status", className="pf-banner", id="pf-older-run") if notice else None,
            html.Div(dash.page_container, id="pf-content"),
        ]
    )


def create_app(settings: Settings) -> dash.Dash:
    """A Dash app serving the run ``settings.data_dir/LATEST`` points at."""
    # the instance folder is never used; given, because Flask cannot find one for a package installed
    # as a namespace's part in editable mode
    server = Flask(__package__, instance_path=str(HERE / "instance"))
    cache = Cache(config=cache_config(settings))
    cache.init_app(server)
    server.extensions[EXTENSION] = {"settings": settings, "cache": _BoundCache(cache, server)}
    if settings.auth_required:
        _install_auth(server, settings)
    _install_report_route(server)
    _install_plan_report_route(server)
    _install_latest_route(server)
    install_metrics_route(server)
    install_compression(server)
    serve_cartesian_plotly(server)  # after the auth hook: charts draw with plotly.js's cartesian bundle
    # named for this package, so Dash imports each page under its own module name (pfscope.app.pages.x)
    app = dash.Dash(
        # Dash documents both: a Flask app as the server, None for no "Updating..." title (its
        # annotations say a factory and a string)
        __package__,
        server=server,  # type: ignore[arg-type]
        use_pages=True,
        pages_folder=str(HERE / "pages"),
        assets_folder=str(assets_folder()),
        title="pfscope",
        update_title=None,  # type: ignore[arg-type]
        suppress_callback_exceptions=True,
    )
    _install_not_found_status(server)
    defer_ag_grid(app)  # AG Grid's bundle only on pages with a grid (assets/pfscope-grid.js)
    app.index_string = INDEX
    app.layout = _shell
    _set_up_dash_now(app, settings)
    return app


def _set_up_dash_now(app: dash.Dash, settings: Settings) -> None:
    """Dash sets itself up on its first request (its scripts' paths, the pages' routes) with no
    lock (plotly/dash#3971): on a threaded server (``--dev``, gunicorn's gthread) the requests
    that came with the first found no script registered and answered 500. One request through
    the test client does it before any thread can."""
    headers = {}
    if settings.auth_required:  # the credentials hook runs before Dash's own
        token = base64.b64encode(f"{settings.user}:{settings.password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    app.server.test_client().get("/latest.json", headers=headers)


class _BoundCache:
    """flask-caching's cache usable outside a request (figures built at start-up, tests)."""

    def __init__(self, cache: Cache, server: Flask):
        self._cache = cache
        self._server = server

    def get(self, key: str) -> Any:
        with self._server.app_context():
            return self._cache.get(key)

    def set(self, key: str, value: Any, timeout: int | None = None) -> Any:
        with self._server.app_context():
            return self._cache.set(key, value, timeout=timeout)


def server() -> Flask:
    """For a WSGI server of your own (``gunicorn "pfscope.app.main:server()"``): settings from ``PFSCOPE_*``
    variables, with the same check as ``pfscope serve`` (which embeds gunicorn itself, see
    ``app.serve``): off loopback without credentials, or without TLS (``PFSCOPE_CERTFILE`` and
    ``PFSCOPE_KEYFILE``, or ``PFSCOPE_BEHIND_TLS_PROXY=1``), one line and exit status 2. (Not a
    ``pfscope`` command: the WSGI server calls it, so it exits itself.)
    """
    try:
        settings = load_settings()
    except SettingsError as e:
        print(f"pfscope: {e}", file=sys.stderr)
        raise SystemExit(ExitStatus.USAGE) from None
    return create_app(settings).server
