"""The write path: ``writer.Indexer`` (sync, transcripts, embedding, the rebuild into a
new generation; every rebuild decision is made here), over ``pipeline`` (memory
files), ``transcripts/`` (every transcript source through one driver) and
``embedding``.

Reads from ``indexer.sources``, writes through ``indexer.store``; never imports the
read path (``indexer.search``) or the surfaces.
"""
