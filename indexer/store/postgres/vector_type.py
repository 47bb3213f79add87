"""pgvector's binary format: a vector sent as a query parameter without rendering its
floats as text."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

__all__ = ["PgVector", "register_vector_type"]


class PgVector:
    """A vector (little-endian float32 bytes) sent as pgvector's binary value."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def binary(self) -> bytes:
        """pgvector's wire format: dimensions and a reserved word (int16 each), then
        the floats, all big-endian."""
        floats = np.frombuffer(self.data, dtype="<f4")
        return struct.pack(">HH", len(floats), 0) + floats.astype(">f4").tobytes()


def register_vector_type(conn: Any, oid: int) -> None:
    """Let ``conn`` send ``PgVector`` parameters (``%b``) as the type ``oid``."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class _Dumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: PgVector) -> bytes:
            return obj.binary()

    _Dumper.oid = oid
    conn.adapters.register_dumper(PgVector, _Dumper)
