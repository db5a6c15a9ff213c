"""Configuration: every ``PFSCOPE_*`` variable is read here and nowhere else.

One precedence rule for every setting: a flag wins over the environment, which wins over the
default (:func:`pick`); one parser per type (:func:`env_text`, :func:`env_int`). The dashboard's
settings are one typed object (:class:`Settings`); the job's are ``compute.flags.JobSettings``,
filled here (:func:`job_settings`) so the pipeline reads no environment of its own.

Safe by default: the dashboard binds to 127.0.0.1 and refuses any other address unless
credentials are configured (then every route asks for HTTP Basic auth) and they cannot travel in
clear: gunicorn serves HTTPS itself (``--certfile``/``--keyfile``), or the operator says a TLS
proxy fronts it (``--behind-tls-proxy``).
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.runtime.config import cores

DEFAULT_DATA = "data/demo/published"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEFAULT_CACHE_TIMEOUT = 3600
#: gunicorn's rule of thumb (2 x cores + 1) is capped here: each worker holds its own tables
MAX_DEFAULT_WORKERS = 12

#: every variable pfscope reads, and what it sets (the README's Configuration lists the same)
VARIABLES = {
    "PFSCOPE_SERVE_DATA": "serve: the folder of published runs (--data)",
    "PFSCOPE_HOST": "serve: the address to bind (--host)",
    "PFSCOPE_PORT": "serve: the port (--port)",
    "PFSCOPE_WORKERS": "serve: gunicorn worker processes (--workers)",
    "PFSCOPE_USER": "serve: HTTP Basic user (with PFSCOPE_PASSWORD: required beyond loopback)",
    "PFSCOPE_PASSWORD": "serve: HTTP Basic password",
    "PFSCOPE_CERTFILE": "serve: the TLS certificate (PEM) gunicorn serves HTTPS with (--certfile; with the key)",
    "PFSCOPE_KEYFILE": "serve: the TLS certificate's private key (PEM, unencrypted) (--keyfile)",
    "PFSCOPE_BEHIND_TLS_PROXY": "serve: 1 when a TLS proxy fronts plain HTTP beyond loopback (--behind-tls-proxy)",
    "PFSCOPE_CACHE_DIR": "serve: the shared file cache's folder",
    "PFSCOPE_CACHE_TIMEOUT": "serve: seconds a cached answer lives",
    "PFSCOPE_REDIS_URL": "serve: a Redis cache shared by every worker instead of files",
    "PFSCOPE_ACCESS_LOG": "serve: gunicorn's access log ('-': stderr)",
    "PFSCOPE_SPARK_MASTER": "compute and ingest on Spark: the Spark master URL (--master)",
    "PFSCOPE_KEEP": "compute: published runs retention keeps (--keep)",
    "PFSCOPE_DRIVER_MEMORY": "compute: the Spark driver's heap (spark.driver.memory)",
    "PFSCOPE_DEBUG": "every command: 1 prints a crash's whole traceback (and Spark's) on stderr (--debug)",
}

T = TypeVar("T")

if TYPE_CHECKING:
    from pfscope.spark_jobs.compute.flags import JobSettings


class SettingsError(OperatorError, ValueError):
    """A setting the operator can fix; printed as one line."""


@dataclass(frozen=True)
class Settings:
    """Everything ``pfscope serve`` and ``app.main:server()`` need; see the README's Configuration."""

    data_dir: Path = Path(DEFAULT_DATA)
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    cache_dir: Path = field(default_factory=lambda: default_cache_dir())
    redis_url: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    cache_timeout: int = DEFAULT_CACHE_TIMEOUT
    certfile: Path | None = None
    keyfile: Path | None = None
    behind_tls_proxy: bool = False

    @property
    def auth_required(self) -> bool:
        return bool(self.user and self.password)

    @property
    def tls(self) -> bool:
        """gunicorn (or Flask's server with ``--dev``) serves HTTPS itself."""
        return self.certfile is not None and self.keyfile is not None

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def check(self) -> Settings:
        """Refuse unsafe or unusable settings (one-line :class:`SettingsError`)."""
        if not 0 < self.port < 65536:
            raise SettingsError(f"port {self.port} is not between 1 and 65535")
        if bool(self.user) != bool(self.password):
            raise SettingsError("set both PFSCOPE_USER and PFSCOPE_PASSWORD, or neither")
        if not is_loopback(self.host) and not self.auth_required:
            raise SettingsError(
                f"refusing to serve on {self.host} without credentials: set PFSCOPE_USER and PFSCOPE_PASSWORD"
            )
        if (self.certfile is None) != (self.keyfile is None):
            raise SettingsError(
                "give both --certfile and --keyfile (PFSCOPE_CERTFILE and PFSCOPE_KEYFILE), or neither"
            )
        if self.certfile is not None and self.keyfile is not None:  # self.tls
            check_tls_files(self.certfile, self.keyfile)
        elif not is_loopback(self.host) and not self.behind_tls_proxy:
            raise SettingsError(
                f"refusing to serve on {self.host} over plain HTTP (the password would travel in clear): give "
                "--certfile and --keyfile (PFSCOPE_CERTFILE, PFSCOPE_KEYFILE), or --behind-tls-proxy "
                "(PFSCOPE_BEHIND_TLS_PROXY=1) if a TLS proxy fronts it"
            )
        if self.cache_timeout < 0:
            raise SettingsError("PFSCOPE_CACHE_TIMEOUT must be 0 or more seconds")
        return self


def default_cache_dir() -> Path:
    """Per-user so two accounts on one machine never share (or fight over) a cache."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"pfscope-cache-{uid}"


def check_tls_files(certfile: Path, keyfile: Path) -> None:
    """Both files readable, and loading as a PEM certificate with its (unencrypted) private key."""
    for what, path in (
        ("certificate (--certfile, PFSCOPE_CERTFILE)", certfile),
        ("key (--keyfile, PFSCOPE_KEYFILE)", keyfile),
    ):
        if not path.is_file():
            raise SettingsError(f"TLS {what} {path}: no such file")
        if not os.access(path, os.R_OK):
            raise SettingsError(f"TLS {what} {path}: not readable (permission denied)")

    def encrypted() -> str:  # OpenSSL would otherwise ask for a passphrase on the terminal
        raise SettingsError(
            f"TLS key {keyfile} is encrypted: give pfscope an unencrypted key (readable only by it)"
        )

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(certfile, keyfile, password=encrypted)
    except ssl.SSLError as e:
        detail = f" ({e.reason})" if e.reason else ""
        raise SettingsError(
            f"TLS certificate {certfile} and key {keyfile} do not load as a PEM certificate "
            f"and its matching private key{detail}"
        ) from None
    except OSError as e:
        raise SettingsError(
            f"cannot read TLS certificate {certfile} or key {keyfile}: {e.strerror or e}"
        ) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def pick(flag: T | None, environment: T | None, default: T) -> T:
    """The one precedence rule: a flag wins over the environment, which wins over the default."""
    if flag is not None:
        return flag
    return environment if environment is not None else default


def env_text(env: Mapping[str, str], name: str) -> str | None:
    """``env[name]``, stripped; None when unset or blank."""
    raw = (env.get(name) or "").strip()
    return raw or None


def env_int(env: Mapping[str, str], name: str) -> int | None:
    """``env[name]`` as a whole number; None when unset or blank; one-line error otherwise."""
    raw = env_text(env, name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a whole number") from None


TRUE_WORDS = ("1", "true", "yes")
FALSE_WORDS = ("0", "false", "no")


def env_flag(env: Mapping[str, str], name: str) -> bool | None:
    """``env[name]`` as a yes/no (1/true/yes, 0/false/no, any case); None when unset or blank;
    one-line error otherwise."""
    raw = env_text(env, name)
    if raw is None:
        return None
    if raw.lower() in TRUE_WORDS:
        return True
    if raw.lower() in FALSE_WORDS:
        return False
    raise SettingsError(f"{name}={raw!r} is not 1/true/yes or 0/false/no")


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def default_workers() -> int:
    """gunicorn's rule of thumb, 2 x cores + 1, capped so a big machine does not fork dozens of
    copies of pandas and Dash (each worker holds its own tables between cache hits)."""
    return min(2 * cores() + 1, MAX_DEFAULT_WORKERS)


def serve_workers(flag: int | None, env: Mapping[str, str] | None = None) -> int:
    """gunicorn workers: ``--workers``, else ``PFSCOPE_WORKERS``, else :func:`default_workers`."""
    n = pick(flag, env_int(_environ(env), "PFSCOPE_WORKERS"), None)
    if n is None:
        return default_workers()
    if n < 1:
        raise SettingsError(f"workers: {n} (need at least 1)")
    return n


def access_log(env: Mapping[str, str] | None = None) -> str | None:
    """Where gunicorn writes its access log (``PFSCOPE_ACCESS_LOG``); None: nowhere."""
    return env_text(_environ(env), "PFSCOPE_ACCESS_LOG")


def job_settings(flags: Any, env: Mapping[str, str] | None = None) -> JobSettings:
    """The job's settings from ``pfscope compute``'s parsed flags, the environment and defaults."""
    from pfscope.spark_jobs.compute.flags import settings_from_flags

    env = _environ(env)
    return settings_from_flags(
        flags,
        master=env_text(env, "PFSCOPE_SPARK_MASTER"),
        keep=env_int(env, "PFSCOPE_KEEP"),
        driver_memory=env_text(env, "PFSCOPE_DRIVER_MEMORY"),
        engine="auto",  # the spark-submit entry runs Spark
    )


def debug_enabled(flag: bool | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether a crash prints its whole traceback: ``--debug``, else ``PFSCOPE_DEBUG``, else no."""
    return pick(flag, env_flag(_environ(env), "PFSCOPE_DEBUG"), False)


def spark_master(env: Mapping[str, str] | None = None) -> str | None:
    """The Spark master ``PFSCOPE_SPARK_MASTER`` names (``ingest`` on Spark, as ``compute``); None: unset."""
    return env_text(_environ(env), "PFSCOPE_SPARK_MASTER")


#: where ``pfscope refresh --out DIR`` publishes its runs (``DIR/published``)
PUBLISHED_RUNS = "published"


def runs_folder(path: Path) -> Path:
    """The folder of published runs ``path`` names: itself, or ``path/published`` when ``path`` is
    a ``pfscope refresh --out`` folder (no ``LATEST`` of its own, a ``published`` folder in it)."""
    inner = path / PUBLISHED_RUNS
    if not (path / "LATEST").exists() and inner.is_dir():
        return inner
    return path


def load_settings(
    env: Mapping[str, str] | None = None,
    *,
    data_dir: str | None = None,
    host: str | None = None,
    port: int | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    behind_tls_proxy: bool | None = None,
) -> Settings:
    """Flags win over ``PFSCOPE_*`` variables, which win over the defaults; checked."""
    env = _environ(env)
    cache_dir = env_text(env, "PFSCOPE_CACHE_DIR")
    cert = pick(certfile or None, env_text(env, "PFSCOPE_CERTFILE"), None)
    key = pick(keyfile or None, env_text(env, "PFSCOPE_KEYFILE"), None)
    return Settings(
        data_dir=runs_folder(Path(pick(data_dir or None, env_text(env, "PFSCOPE_SERVE_DATA"), DEFAULT_DATA))),
        host=pick(host or None, env_text(env, "PFSCOPE_HOST"), DEFAULT_HOST),
        port=pick(port, env_int(env, "PFSCOPE_PORT"), DEFAULT_PORT),
        cache_dir=Path(cache_dir) if cache_dir else default_cache_dir(),
        redis_url=env_text(env, "PFSCOPE_REDIS_URL"),
        user=env_text(env, "PFSCOPE_USER"),
        password=env.get("PFSCOPE_PASSWORD") or None,  # a password is taken as typed, spaces and all
        cache_timeout=pick(None, env_int(env, "PFSCOPE_CACHE_TIMEOUT"), DEFAULT_CACHE_TIMEOUT),
        certfile=Path(cert) if cert else None,
        keyfile=Path(key) if key else None,
        behind_tls_proxy=pick(behind_tls_proxy, env_flag(env, "PFSCOPE_BEHIND_TLS_PROXY"), False),
    ).check()
