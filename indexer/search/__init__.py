"""The read path: ``searcher.Searcher`` (memory_search, status; pooled), each search
a ``run`` of the stage pipeline (``pipeline.STAGES``, the stages in ``stages/``)
over a query as ``query`` and ``when`` understand it, rendered by ``results``;
``gating``; the daemon's in-memory snapshot (``live``: ``keywords`` postings and
``vector_memory`` in ``segments``, caught up by ``refresher``) and ``documents``
(memory_get).

Reads through ``indexer.store`` and ``indexer.sources``; never imports the write path
(``indexer.indexing``) or the surfaces.
"""
