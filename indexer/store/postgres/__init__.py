"""The PostgreSQL + pgvector store: one database for many agents on many hosts.

``backend.PostgresBackend`` opens an agent's generation in the database; ``store``'s
``PgStore`` puts the parts together: ``connection`` (a pooled connection,
transactions, meta), ``tables`` (files, chunks, their terms, the change feed, cursors,
skips), ``search`` (keyword search), ``vectors`` and ``cache`` (the shared embedding
cache, batch jobs). ``connect`` holds the pools, ``schema`` the migrations.

Nothing here is imported until an agent's index lives in PostgreSQL: psycopg is an
optional dependency.

Siblings it may import: ``store.base``, ``store.bm25``, ``store.file_sync``,
``store.records``, ``store.tokens``, ``store.writer_lock``.
"""
