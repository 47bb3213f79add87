"""The daemon's in-memory snapshot of one agent's index, for long-running processes:
``live`` (keyword postings and vectors, swapped in whole), ``keywords`` (BM25 exact
to the FTS5 ranking, over ``keyword_segments``), ``vector_memory`` (matrices, else the
store's own vector index), ``segments`` (which rows of a segment are live, merging)
and ``refresher`` (one background catch-up at a time).

Reads through ``indexer.store``; knows nothing of ranking.

Siblings it may import: ``search.candidates``, ``search.query``.
"""
