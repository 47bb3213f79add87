"""What a memory_search query means, before anything is read: its words and the
text the keyword index is built from (``parse``), the time it asks about (``when``,
over the table of time expressions in ``when_rules``), the names it asks about that
memory never mentions (``names``), and whether an auto-recall caller should search at
all (``gating``).

Pure functions of the query and the clock: no store, no files.

Siblings it may import: none.
"""
