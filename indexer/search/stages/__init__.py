"""The ranking stages, one list of them in ``search/pipeline.py``: what each search
does to its candidates, in order.

``base`` says what a stage is (``Stage``) and the only ways a stage changes the
order (``by_score``, ``rescored``); ``context`` holds what one request knows
(``RunContext``). Then, in the pipeline's order: ``retrieve`` (where candidates come
from), ``exact`` (rules on the keyword side), ``fuse`` (the two sides merged),
``signals`` (importance, project, age), ``time`` (the time a query names),
``first_mention``, ``decision``, ``rerank``, ``dedup`` (one result per place),
``supersede`` (the newer of two statements of one fact first), ``balance`` (the mix
of sources, diversity) and ``final`` (the floor, the cut, abstention).

A stage module imports ``base``, ``context`` and the query-understanding and
snapshot modules of ``search/``; never ``pipeline``, ``run`` or ``results``, and
no other stage module but ``retrieve`` (its helpers) and ``time`` (its score).

Siblings it may import: ``search.candidates``, ``search.facts``, ``search.query``,
``search.snapshot``, ``search.snippets``, ``search.time_scope``.
"""
