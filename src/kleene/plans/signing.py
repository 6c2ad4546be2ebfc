"""Saved plan states are signed, so that a checkpoint someone else wrote is refused before it
is unpickled (unpickling runs code).

The key is `KLEENE_STATE_KEY` from the environment when it is set: any text, the same
wherever states are saved and resumed (on Spark, the driver's; kleene ships it to the
workers). Otherwise it is this user's own, made once at random in
`$XDG_CONFIG_HOME/kleene/state-key` (`~/.config/kleene/state-key`), readable by the user
alone: states then resume on this machine, as this user.

>>> key = b"a key"
>>> signature(key, b"header", b"state") == signature(key, b"header", b"state")
True
>>> signature(key, b"header", b"state") == signature(b"another key", b"header", b"state")
False
>>> signature(key, b"head", b"erstate") == signature(key, b"header", b"state")
False
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from functools import cache
from pathlib import Path

from kleene.errors import StateError

__all__ = ["ENVIRONMENT", "signature", "state_key"]

#: The environment variable that holds the key.
ENVIRONMENT = "KLEENE_STATE_KEY"


def state_key() -> bytes:
    """The key that signs and checks saved states (see the module docstring)."""
    given = os.environ.get(ENVIRONMENT)
    if given:
        return given.encode()
    return _own_key(_key_file())


def signature(key: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 of the parts, each with its length (so no two splits sign alike)."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


def _key_file() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "kleene" / "state-key"


@cache
def _own_key(path: Path) -> bytes:
    """The user's key at `path`, made there (mode 0600) the first time."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()  # another process made it first
    except OSError as error:
        raise StateError(
            f"saved states are signed with a key, and kleene could not make one in {path} "
            f"({error.strerror}): set {ENVIRONMENT} to a secret of your own"
        ) from None
    key = secrets.token_hex(32).encode()
    with os.fdopen(descriptor, "wb") as file:
        file.write(key)
    return key
