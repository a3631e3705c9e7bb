"""Recording the py4j round trips of a block: what the hot path's round-trip bounds are counted with."""

from __future__ import annotations

import threading

from py4j.clientserver import ClientServerConnection

from pyspark_incr import trips


def test_each_jvm_call_of_any_thread_is_recorded_with_its_method_and_thread(spark):
    session = spark._jsparkSession
    other = threading.Thread(target=session.sessionUUID)

    with trips.recorded() as sent:
        session.version()
        other.start()
        other.join()

    calls = [(t.method, t.thread) for t in sent if not t.method.startswith("(")]
    assert calls == [("version", threading.get_ident()), ("sessionUUID", other.ident)]
    # a thread's first command opens its own connection to the JVM (an authentication): recorded, by its letter
    assert {t.method for t in sent} - {"version", "sessionUUID"} <= {"(A)"}
    assert all(t.ms >= 0 for t in sent)


def test_py4j_sends_as_before_once_the_block_is_left_even_by_an_error(spark):
    send = ClientServerConnection.send_command
    try:
        with trips.recorded():
            raise RuntimeError("left")
    except RuntimeError:
        pass

    assert ClientServerConnection.send_command is send
    with trips.recorded() as sent:
        pass
    spark._jsparkSession.version()
    assert sent == []
