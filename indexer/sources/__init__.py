"""What to index: discovery of memory files under a workspace, safe file reading
(``safefs``, ``text``, ``files``), Markdown chunking and token counting, the curated
files' entries, redaction, the file watcher and poller; session transcripts, each
source with its reading and ``memory_get``, in ``transcripts/``.

Imports nothing above it but ``indexer.config``, ``indexer.errors``, ``indexer.api``
(the request and response types).
"""
