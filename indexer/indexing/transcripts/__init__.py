"""Indexing session transcripts: every source (``session_sync.SOURCES``) through one
driver. ``source`` is the protocol a source implements and the records it hands the
sync; ``session_files`` is the sessions folder (JSONL files, rotated ones, and
``archive_sync`` for deleted sessions' archives), ``db_sessions`` OpenClaw's agent
database, ``session_tail`` a transcript's uncommitted delta.

Siblings it may import: none.
"""
