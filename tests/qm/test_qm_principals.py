"""Application users' passwords are stored as salted hashes; older plain-text entries are upgraded on start."""

from __future__ import annotations

from pathlib import Path

import pytest
from flowbroker.qm import log as qlog
from flowbroker.qm.client import Client, QMError
from flowbroker.qm.harness import QueueManagerProcess
from flowbroker.qm.principals import Principals, hash_password, is_hashed, verify_password

pytestmark = pytest.mark.timeout(90)


def _stored_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (data_dir / "log").iterdir() if p.is_file())


def test_hash_and_verify() -> None:
    stored = hash_password("correct horse")
    assert is_hashed(stored) and "correct horse" not in stored
    assert stored != hash_password("correct horse")  # salted
    assert verify_password(stored, "correct horse")
    assert not verify_password(stored, "correct horsf")
    assert not verify_password(None, "correct horse")
    assert not verify_password("scrypt$x$8$1$AAAA$AAAA", "anything")  # a damaged entry never matches


def test_plain_entries_are_upgraded_when_loaded() -> None:
    p = Principals()
    assert p.load({"old": "old-password", "new": hash_password("new-password")}) is True
    assert all(is_hashed(v) for v in p.as_dict().values())
    assert verify_password(p.hashes["old"], "old-password")
    assert p.load({"new": p.hashes["new"]}) is False


def test_defined_users_are_stored_hashed(data_dir: Path) -> None:
    with QueueManagerProcess(data_dir) as qm, qm.client() as c:
        c.define_user("dora", "dora-secret-pw")
        c.admin("checkpoint")
        with Client.connect(qm.url, user="dora", password="dora-secret-pw") as dora:
            dora.ping()
        with pytest.raises(QMError) as e:
            Client.connect(qm.url, user="dora", password="dora-wrong-pw")
        assert e.value.reason_code == 2035
    assert b"dora-secret-pw" not in _stored_bytes(data_dir)
    with QueueManagerProcess(data_dir) as qm:
        with Client.connect(qm.url, user="dora", password="dora-secret-pw") as dora:
            dora.ping()  # verified against the stored hash after a restart
        with qm.client() as c:
            c.ping()  # and the credentials file still works for the administrator


def test_a_data_directory_with_plain_passwords_keeps_working_and_loses_them(data_dir: Path) -> None:
    log_dir = data_dir / "log"
    log_dir.mkdir(parents=True)
    (log_dir / "00000001.log").write_bytes(
        qlog.json_record(qlog.REC_META, {"users": {"erin": "erin-plain-pw"}, "acls": {}})
        + qlog.json_record(qlog.REC_QUEUE, {"name": "KEPT", "attrs": {"description": "old"}})
    )
    with QueueManagerProcess(data_dir) as qm:
        with Client.connect(qm.url, user="erin", password="erin-plain-pw") as erin:
            assert erin.inquire_queue("KEPT")["description"] == "old"
        with pytest.raises(QMError):
            Client.connect(qm.url, user="erin", password="not-erins-pw")
        assert b"erin-plain-pw" not in _stored_bytes(data_dir)  # replaced as the server started
    with QueueManagerProcess(data_dir) as qm:
        with Client.connect(qm.url, user="erin", password="erin-plain-pw") as erin:
            erin.ping()
