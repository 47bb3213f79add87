"""QMD's documents catalogue (``~/.cache/qmd/index.sqlite``): the table a QMD manager
(OpenClaw before 2026.8) reads while ``memindex-qmd update`` runs, in QMD's own
schema. memindex's index stays in its own file; this holds only (collection, path,
title, hash, active) per document, so the manager can name results by docid.

Plain ``sqlite3`` (no extensions needed), WAL, autocommit with explicit short
transactions: the manager reads it with a short busy timeout.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from indexer.store.sqlite.connection import private_dir, private_file

__all__ = ["Catalogue"]

_BATCH = 500  # rows per transaction


class Catalogue:
    def __init__(self, path: Path) -> None:
        private_dir(path.parent)
        private_file(path)
        self.db = sqlite3.connect(path, timeout=10, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS documents(id INTEGER PRIMARY KEY, collection TEXT NOT"
            " NULL, path TEXT NOT NULL, title TEXT, hash TEXT NOT NULL, created_at TEXT,"
            " modified_at TEXT, active INTEGER NOT NULL DEFAULT 1, UNIQUE(collection, path))"
        )
        self.db.execute("CREATE INDEX IF NOT EXISTS documents_hash ON documents(hash)")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Catalogue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def replace_all(self, rows: Sequence[tuple[str, str, str, str]]) -> None:
        """The active documents become ``rows`` of (collection, path, title, hash);
        every other one is marked inactive (QMD keeps them)."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("UPDATE documents SET active=0")
            for start in range(0, len(rows), _BATCH):  # short transactions
                if start:
                    db.execute("COMMIT")
                    db.execute("BEGIN IMMEDIATE")
                db.executemany(
                    "INSERT INTO documents(collection, path, title, hash, created_at,"
                    " modified_at, active) VALUES(?, ?, ?, ?, ?, ?, 1)"
                    " ON CONFLICT(collection, path) DO UPDATE SET hash=excluded.hash,"
                    " title=excluded.title, active=1, modified_at=excluded.modified_at",
                    [(c, p, t, h, now, now) for c, p, t, h in rows[start : start + _BATCH]],
                )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def docid(self, collection: str, path: str) -> str | None:
        """QMD's short docid (``#`` and the hash's first six characters) of an active
        document."""
        row = self.db.execute(
            "SELECT hash FROM documents WHERE collection=? AND path=? AND active=1",
            (collection, path),
        ).fetchone()
        return None if row is None else "#" + str(row[0])[:6]
