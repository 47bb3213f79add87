"""The read path: ``searcher.Searcher`` (memory_search, memory_get, status; pooled),
each search a ``run`` of the stage pipeline (``pipeline.STAGES``, the stages in
``stages/``) over a query as ``query/`` understands it (words, time, names, gating),
on candidates (``candidates``) from the store or the daemon's in-memory snapshot
(``snapshot/``), rendered by ``results`` with ``snippets``; ``documents`` (memory_get),
``curated_entries`` (memory_curated), ``recall_tally`` and ``audit/``
(memory_audit).

Reads through ``indexer.store`` and ``indexer.sources``; never imports the write path
(``indexer.indexing``) or the surfaces.
"""
