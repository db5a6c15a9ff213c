"""Reading the PFSCOPE_* environment variables that hold whole numbers (shared by the job and
the server, each raising its own layer's one-line error)."""

from __future__ import annotations

from collections.abc import Mapping


def env_int(env: Mapping[str, str], name: str, error: type[Exception]) -> int | None:
    """``env[name]`` as an integer; None when unset or blank; ``error`` when it is other text."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise error(f"{name}={raw!r} is not a whole number") from None
