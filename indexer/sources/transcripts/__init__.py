"""Session transcripts, each source with its listing, reading, rendering and its part
of ``memory_get`` (``get``): the sessions folder's JSONL files (``sessions``: the
message model every source renders to, bounded line reads in ``line_reads``), the
compressed archives OpenClaw leaves of deleted sessions (``archives``), and OpenClaw's
own agent database (``agent_db``: the only code that opens it, read-only;
``agent_db_rows`` decodes a row within bounds, ``agent_db_render`` names and renders
its sessions). ``messages`` groups rendered messages into chunks' lines; ``distill``
hands transcript batches to a distiller.

The index's own SQL stays in ``store/``; the agent database is a foreign, read-only
file, read here beside its source.

Siblings it may import: ``sources.origins``, ``sources.redaction``, ``sources.safefs``,
``sources.chunking``, ``sources.discovery``, ``sources.files``.
"""
