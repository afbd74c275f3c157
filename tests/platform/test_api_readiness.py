"""`flowbroker up` as a script sees it: ready when health says so, and answering while long-polls wait."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

PASSWORD = "readiness-admin-pass"


def _ready(up: Any, timeout: float = 90.0) -> None:
    """Poll health as a deployment script would, as fast as it answers, until it says ok."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            response = httpx.get(up.url + "/api/health", timeout=2)
            if response.status_code == 200 and response.json()["status"] == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"health never said ok; output: {up.lines}")


@pytest.mark.timeout(180)
def test_a_login_right_after_health_says_ok_succeeds_the_first_time(start_up: Any) -> None:
    up = start_up(env={"FLOWBROKER_ADMIN_PASSWORD": PASSWORD})
    _ready(up)
    login = httpx.post(
        up.url + "/api/auth/login", json={"username": "admin", "password": PASSWORD}, timeout=10
    )
    assert login.status_code == 200, login.text


@pytest.mark.timeout(180)
def test_health_and_login_answer_while_long_polls_wait(start_up: Any) -> None:
    up = start_up(env={"FLOWBROKER_ADMIN_PASSWORD": PASSWORD, "FLOWBROKER_LONG_POLL_MAX_WAIT": "25"})
    _ready(up)
    login = httpx.post(
        up.url + "/api/auth/login", json={"username": "admin", "password": PASSWORD}, timeout=10
    )
    headers = {"Authorization": f"Bearer {login.json()['accessToken']}"}
    assert (
        httpx.post(up.url + "/api/queues", json={"name": "POLLED"}, headers=headers, timeout=10).status_code
        == 201
    )
    too_long = httpx.post(up.url + "/api/queues/POLLED/get", params={"wait": 26}, headers=headers, timeout=10)
    assert too_long.status_code == 422 and too_long.json()["detail"][0]["pointer"] == "/wait"

    # More waits than the API has worker threads (40), and than FLOWBROKER_LONG_POLL_MAX (32).
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def poll() -> None:
        response = httpx.post(
            up.url + "/api/queues/POLLED/get", params={"wait": 20}, headers=headers, timeout=60
        )
        with lock:
            answers.append(response)

    polls = [threading.Thread(target=poll) for _ in range(45)]
    for thread in polls:
        thread.start()
    try:
        # The waits past the limit are refused at once: then every poll has reached the API.
        deadline = time.monotonic() + 15
        while sum(1 for a in list(answers) if a.status_code == 429) < 13 and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = [a for a in list(answers) if a.status_code == 429]
        assert len(refused) == 13, [a.status_code for a in answers]
        assert refused[0].headers["Retry-After"] == "1"
        assert refused[0].json()["code"] == "too_many_long_polls"

        health = httpx.get(up.url + "/api/health", timeout=30)
        again = httpx.post(
            up.url + "/api/auth/login", json={"username": "admin", "password": PASSWORD}, timeout=30
        )
        with lock:
            answered = len(answers)
        assert health.status_code == 200 and again.status_code == 200
        # Both answered while the 32 admitted long-polls were still waiting.
        assert answered == 13
    finally:
        for thread in polls:
            thread.join(timeout=60)
    assert sorted(a.status_code for a in answers) == [200] * 32 + [429] * 13
    assert all(a.json() is None for a in answers if a.status_code == 200)
