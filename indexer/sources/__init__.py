"""What to index: discovery of memory files under a workspace, safe file reading
(``safefs``, ``text``), Markdown chunking and token counting, session transcripts
(``sessions``), the file watcher, and transcript batches for a distiller.

Imports nothing above it but ``indexer.config`` and ``indexer.errors``.
"""
