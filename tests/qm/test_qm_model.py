"""Random sequences of queue operations against the real server agree with a plain model of MQ semantics."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from flowbroker.qm.client import Client, MessageDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(180)


@dataclass
class _Held:
    seq: int
    priority: int
    body: bytes
    correl: bytes
    backouts: int = 0


class _Model:
    """Priority order, FIFO within priority, syncpoint puts invisible until commit, backout restores."""

    def __init__(self) -> None:
        self.available: list[_Held] = []
        self.pending_puts: list[_Held] = []
        self.pending_gets: list[_Held] = []
        self.seq = 0

    def _order(self) -> list[_Held]:
        return sorted(self.available, key=lambda m: (-m.priority, m.seq))

    def put(self, priority: int, body: bytes, correl: bytes, sync: bool) -> None:
        self.seq += 1
        m = _Held(self.seq, priority, body, correl)
        (self.pending_puts if sync else self.available).append(m)

    def get(self, correl: bytes | None, sync: bool) -> _Held | None:
        for m in self._order():
            if correl is None or m.correl == correl:
                self.available.remove(m)
                if sync:
                    self.pending_gets.append(m)
                return m
        return None

    def commit(self) -> None:
        # Committed puts take their place in the queue at commit, after everything already there.
        for m in self.pending_puts:
            self.seq += 1
            m.seq = self.seq
        self.available.extend(self.pending_puts)
        self.pending_puts.clear()
        self.pending_gets.clear()

    def backout(self) -> None:
        self.pending_puts.clear()
        for m in self.pending_gets:
            m.backouts += 1
            self.available.append(m)
        self.pending_gets.clear()


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 9), st.sampled_from([b"A", b"B", b"C"]), st.booleans()),
        st.tuples(st.just("get"), st.sampled_from([None, b"A", b"B", b"C"]), st.booleans()),
        st.tuples(st.just("commit")),
        st.tuples(st.just("backout")),
    ),
    max_size=60,
)


@pytest.mark.parametrize("memory_buffer", [16 * 1024 * 1024, 2048], ids=["in-memory", "spilling"])
def test_random_operations_match_the_model(client: Client, memory_buffer: int) -> None:
    name = f"MODEL.{memory_buffer}"
    client.define_queue(name, replace=True, memory_buffer=memory_buffer, max_depth=100_000)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(OPS)
    def run(ops: list[tuple]) -> None:  # type: ignore[type-arg]
        client.backout()
        client.purge(name)
        model = _Model()
        counter = 0
        for op in ops:
            if op[0] == "put":
                _, prio, correl, sync = op
                counter += 1
                body = b"%d" % counter + b"." * 600  # large enough that the small buffer spills
                client.put(name, body, MessageDescriptor(priority=prio, correl_id=correl), syncpoint=sync)
                model.put(prio, body, correl, sync)
            elif op[0] == "get":
                _, correl, sync = op
                got = client.get(name, correl_id=correl, syncpoint=sync)
                want = model.get(correl, sync)
                assert (got is None) == (want is None), (op, got, want)
                if got is not None and want is not None:
                    assert got.body[:3] == want.body[:3], (op, ops)
                    assert got.md.backout_count == want.backouts
            elif op[0] == "commit":
                client.commit()
                model.commit()
            else:
                client.backout()
                model.backout()
        client.commit()
        model.commit()
        rest = [m.body for m in client.browse(name)]
        assert [r[:3] for r in rest] == [m.body[:3] for m in model._order()], ops

    run()
