"""The read path: ``searcher.Searcher`` (memory_search, status; pooled), each search
a ``run.SearchRun`` over ``query`` (what a query means), ``keyword_hits`` (keyword
candidates), ``fusion``, ``ranking``, ``rerank_stage``, ``results`` (result objects),
``gating``, the daemon's in-memory snapshot (``live``: ``keywords`` postings and
``vector_memory`` in ``segments``, caught up by ``refresher``) and ``documents``
(memory_get).

Reads through ``indexer.store`` and ``indexer.sources``; never imports the write path
(``indexer.indexing``) or the surfaces.
"""
