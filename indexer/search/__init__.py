"""The read path: ``searcher.Searcher`` (memory_search, status) over ``query`` (what a
query means), ``retrieval`` (keyword candidates, fusion, rendering), ``ranking``,
``gating``, the daemon's in-memory snapshot (``live``: ``keywords`` postings and
``vectors`` in ``segments``, caught up by ``refresher``) and ``documents``
(memory_get).

Reads through ``indexer.store`` and ``indexer.sources``; never imports the write path
(``indexer.indexing``) or the surfaces.
"""
