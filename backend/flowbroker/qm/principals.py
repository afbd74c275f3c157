"""Application users of the queue manager: salted scrypt hashes of their passwords, never the passwords.

The recovery log and checkpoints hold ``scrypt$N$r$p$<salt>$<key>`` for each user; entries that
older data directories wrote in plain text are hashed when the queue manager loads them. A full
verification costs tens of milliseconds of CPU on purpose, so the server runs it off the event
loop; a user who has authenticated once is recognised again by an HMAC under a key that lives only
in this process, so reconnecting applications do not pay for the hash every time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SCHEME = "scrypt"
_N, _R, _P = 1 << 14, 8, 1
_SALT_BYTES = 16
_KEY_BYTES = 32
_MAXMEM = 64 * 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(_SALT_BYTES)
    key = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, maxmem=_MAXMEM, dklen=_KEY_BYTES)
    return f"{SCHEME}${_N}${_R}${_P}${_b64(salt)}${_b64(key)}"


def is_hashed(stored: str) -> bool:
    parts = stored.split("$")
    return len(parts) == 6 and parts[0] == SCHEME


def verify_password(stored: str | None, password: str) -> bool:
    """True when ``password`` matches the stored hash; safe to call from any thread."""
    if stored is None or not is_hashed(stored):
        # Unknown users cost as much as known ones: the timing says nothing about who exists.
        stored, password = _DUMMY, password + "\x00"
    _, n, r, p, salt, key = stored.split("$")
    try:
        expected = base64.b64decode(key, validate=True)
        derived = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt, validate=True),
            n=int(n),
            r=int(r),
            p=int(p),
            maxmem=_MAXMEM,
            dklen=len(expected),
        )
    except ValueError:
        return False
    return hmac.compare_digest(derived, expected)


_DUMMY = hash_password(secrets.token_urlsafe(16))


class Principals:
    """User name → stored password hash, plus the users verified since this process started."""

    def __init__(self) -> None:
        self.hashes: dict[str, str] = {}
        self._key = secrets.token_bytes(32)
        self._verified: dict[str, bytes] = {}

    def load(self, users: dict[str, str]) -> bool:
        """Take users from the log or a checkpoint; True when plain-text entries had to be hashed."""
        upgraded = False
        for user, stored in users.items():
            if not isinstance(user, str) or not isinstance(stored, str):
                continue
            if not is_hashed(stored):
                stored = hash_password(stored)
                upgraded = True
            self.hashes[user] = stored
            self._verified.pop(user, None)
        return upgraded

    def define(self, user: str, password: str) -> None:
        self.hashes[user] = hash_password(password)
        self.remember(user, password)

    def ensure(self, user: str, password: str) -> bool:
        """Make ``password`` the user's (the credentials file's user on start); True if it changed."""
        stored = self.hashes.get(user)
        changed = stored is None or not verify_password(stored, password)
        if changed:
            self.hashes[user] = hash_password(password)
        self.remember(user, password)
        return changed

    def _mac(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode(), hashlib.sha256).digest()

    def remember(self, user: str, password: str) -> None:
        self._verified[user] = self._mac(password)

    def recognised(self, user: str, password: str) -> bool:
        """True when this user authenticated with this password earlier in this process."""
        mac = self._verified.get(user)
        return mac is not None and hmac.compare_digest(mac, self._mac(password))

    def as_dict(self) -> dict[str, str]:
        return dict(self.hashes)
