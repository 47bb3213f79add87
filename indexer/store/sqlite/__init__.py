"""The SQLite store: one file per agent (``Store``), opened through apsw (a binding
that bundles a current SQLite with FTS5 and can load extensions), in WAL mode.

Split by concern, each a class the next builds on: ``connection`` (the connection,
pragmas, migrations, transactions, meta), ``chunks`` (files, chunks and their FTS
rows, the change feed, transcript cursors, skipped files), ``vec_tables``
(sqlite-vec, the embedding cache, batch jobs) and ``store`` (``Store``: all of them,
keyword search, export for ``migrate``, health checks). ``generations`` swaps a
rebuilt file in; ``migrations`` is the schema's history; ``qmd_catalogue`` is QMD's
documents table for ``memindex-qmd``.

sqlite-vec is loaded when it can be; when it cannot, keyword search keeps working
and ``vector_error`` says why.

Siblings it may import: ``store.base``, ``store.bm25``, ``store.file_sync``,
``store.records``, ``store.tokens``, ``store.writer_lock``.
"""

from indexer.store.sqlite.connection import private_dir, private_file
from indexer.store.sqlite.store import Store

__all__ = ["Store", "private_dir", "private_file"]
