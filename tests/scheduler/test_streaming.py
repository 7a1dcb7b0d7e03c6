"""Selection streams its rows (scheduler.jobgen.streaming): every row comes, in batches, and a stream left
before its end leaves the transaction usable, on PostgreSQL (libpq's chunked rows, which a half-read result
would otherwise block) and on SQLite."""

from __future__ import annotations

from sqlalchemy import column, literal, select, table, text

from scheduler.jobgen.streaming import stream_batches, stream_rows


def _numbers(conn, count: int):
    conn.execute(text("CREATE TEMP TABLE numbers (n INTEGER, t TEXT)"))
    if conn.dialect.name == "postgresql":
        conn.execute(text("INSERT INTO numbers SELECT n, 'text ' || n FROM generate_series(1, :count) n"),
                     {"count": count})
    else:
        conn.execute(text("INSERT INTO numbers VALUES " + ", ".join(f"({n}, 'text {n}')" for n in range(1, count + 1))))
    numbers = table("numbers", column("n"), column("t"))
    return select(numbers.c.n, numbers.c.t)


def test_every_row_comes_in_batches(engine):
    with engine.connect() as conn:
        query = _numbers(conn, 2500)
        batches = list(stream_batches(conn, query, batch_size=1000))
        assert [len(batch) for batch in batches] == [1000, 1000, 500]
        assert sorted(row[0] for batch in batches for row in batch) == list(range(1, 2501))
        assert all(isinstance(row, tuple) and row[1] == f"text {row[0]}" for batch in batches for row in batch)
        assert sum(1 for _ in stream_rows(conn, query, batch_size=7)) == 2500


def test_a_stream_left_early_ends_its_query(engine):
    """Left early (the caller raised), the stream is closed: PostgreSQL's query is cancelled and what it sent
    drained, so the transaction rolls back at once and the connection goes on (a half-read result would block
    the rollback for good)."""
    with engine.connect() as conn:
        stream = stream_batches(conn, _numbers(conn, 200_000), batch_size=1000)
        try:
            for batch in stream:
                raise RuntimeError(f"stopped at {batch[0][0]}")
        except RuntimeError:
            pass
        finally:
            stream.close()
        conn.rollback()
        assert conn.scalar(select(literal(41) + 1)) == 42
