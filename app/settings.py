"""The dashboard's settings: one typed object, from flags and ``PFSCOPE_*`` variables.

Safe by default: the dashboard binds to 127.0.0.1 and refuses any other address unless
credentials are configured (then every route asks for HTTP Basic auth).
"""

from __future__ import annotations

import ipaddress
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from spark_jobs.model.errors import OperatorError

DEFAULT_DATA = "data/demo/published"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEFAULT_CACHE_TIMEOUT = 3600


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

    @property
    def auth_required(self) -> bool:
        return bool(self.user and self.password)

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
        if self.cache_timeout < 0:
            raise SettingsError("PFSCOPE_CACHE_TIMEOUT must be 0 or more seconds")
        return self


def default_cache_dir() -> Path:
    """Per-user so two accounts on one machine never share (or fight over) a cache."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"pfscope-cache-{uid}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a whole number") from None


def load_settings(
    env: Mapping[str, str] | None = None,
    *,
    data_dir: str | None = None,
    host: str | None = None,
    port: int | None = None,
) -> Settings:
    """Flags win over ``PFSCOPE_*`` variables, which win over the defaults; checked."""
    env = os.environ if env is None else env
    return Settings(
        data_dir=Path(data_dir or env.get("PFSCOPE_SERVE_DATA") or DEFAULT_DATA),
        host=host or env.get("PFSCOPE_HOST") or DEFAULT_HOST,
        port=port if port is not None else _int(env, "PFSCOPE_PORT", DEFAULT_PORT),
        cache_dir=Path(env["PFSCOPE_CACHE_DIR"]) if env.get("PFSCOPE_CACHE_DIR") else default_cache_dir(),
        redis_url=env.get("PFSCOPE_REDIS_URL") or None,
        user=env.get("PFSCOPE_USER") or None,
        password=env.get("PFSCOPE_PASSWORD") or None,
        cache_timeout=_int(env, "PFSCOPE_CACHE_TIMEOUT", DEFAULT_CACHE_TIMEOUT),
    ).check()
