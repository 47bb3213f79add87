"""One agent's in-memory snapshot for long-running processes: keyword postings
(keywords.py) and vectors (vectors.py), swapped in whole.

A search takes the current ``Snapshot`` and never loads anything: if the index
changed since (its ``change_versions``), the search answers from the snapshot it
has and an update starts on a thread of its own. An update reads the store's change
feed since the snapshot (chunks deleted, embedded or moved; chunks added are those
above its highest id) and applies it as new segments: a write costs a read of what
it changed. Only the first snapshot of an index file, a new embedding model and a
reader that fell behind the pruned feed read everything, on a background thread
(seconds at 100k chunks) while searches use SQLite.

The daemon's writer also updates the snapshot itself after each task (``update``
with ``full=False``), so a search that follows a finished sync sees it, unless a
background update holds the snapshot then (a full read: ~40 s at a million
chunks): the writer does not wait for it, and that update goes round once more
when done. Between a commit and the update a search may meet a chunk that is gone:
rendering reads rows by id and drops the ones that no longer exist
(results.render_results).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from indexer.api import MemoryState
from indexer.errors import MemindexError
from indexer.search.snapshot.keywords import MIN_CHUNKS, KeywordPart
from indexer.search.snapshot.refresher import Refresher
from indexer.search.snapshot.vector_memory import QUANTIZE_AT, VectorPart, release_freed_memory
from indexer.store import STORE_ERRORS, IndexStore
from indexer.store.tokens import Tokenizer

__all__ = ["LiveIndex", "Snapshot"]

_UPDATE_ERRORS: tuple[type[BaseException], ...] = (
    *STORE_ERRORS,
    OSError,
    ValueError,
    MemindexError,
)

log = logging.getLogger(__name__)

Versions = tuple[str | None, str | None, str | None]  # Store.change_versions()


@dataclass(frozen=True)
class Snapshot:
    identity: str  # the index it was read from (``IndexStore.identity``)
    versions: Versions  # that generation's change versions when it was last brought up to date
    keywords: KeywordPart | None  # None: FTS5 answers (a small index)
    vectors: VectorPart | None  # None: no vectors (or not read yet)


class LiveIndex:
    def __init__(self, *, min_chunks: int = MIN_CHUNKS, quantize_at: int = QUANTIZE_AT) -> None:
        self.min_chunks = min_chunks
        self.quantize_at = quantize_at  # vectors from which they are kept quantized
        self.tokens = Tokenizer()
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()  # one update at a time
        self._refresh = Refresher("live-snapshot")
        self._again = False  # the writer changed the index during a background update
        self.error: str | None = None  # why the last update failed
        self.full_loads = 0  # reads of everything (tests, benches)
        self.updates = 0  # incremental updates

    @property
    def snapshot(self) -> Snapshot | None:
        """The current snapshot (of whichever file was read last)."""
        return self._snap

    def get(self, store: IndexStore, versions: Versions) -> Snapshot | None:
        """The snapshot of ``store``'s file, current or not (an update starts in the
        background if it is not); None if there is none of this file yet."""
        snap = self._snap
        if snap is None or snap.identity != store.identity or snap.versions != versions:
            self._refresh.start(self._update_from, store.reopen)
        return snap if snap is not None and snap.identity == store.identity else None

    def state(self, identity: str, versions: Versions) -> MemoryState:
        """What the snapshot holds for the index ``identity`` at ``versions`` (``status``)."""
        snap, busy = self._snap, self._refresh.busy
        if snap is None or snap.identity != identity:
            state = "loading" if busy else "not loaded"
            kw = vec = None
        else:
            state = "current" if snap.versions == versions else "updating" if busy else "behind"
            kw, vec = snap.keywords, snap.vectors
        return {
            "state": state,
            "keywordRows": None if kw is None else kw.live,
            "vectorRows": None if vec is None else sum(s.live for s in vec.segments),
            "error": self.error,
        }

    def wait_ready(self, store: IndexStore, timeout: float = 120.0) -> bool:
        """Bring the snapshot up to date with ``store`` now (benchmarks and tests)."""
        deadline = time.monotonic() + timeout
        while self._refresh.busy and time.monotonic() < deadline:
            time.sleep(0.01)
        snap = self.update(store)
        return snap is not None and snap.versions == store.change_versions()

    def _update_from(self, reopen: Callable[[], IndexStore]) -> None:
        try:
            with reopen() as store:
                self.update(store)
                # the writer went on meanwhile: what it wrote too (not after a failed
                # read: the next search starts one, spaced out by the Refresher)
                while self._again and self._snap is not None:
                    self._again = False
                    self.update(store)
        except _UPDATE_ERRORS as exc:
            # ``update`` never raises: opening the file failed (replaced or removed
            # by a rebuild); the next search tries again.
            log.warning("updating the in-memory snapshot failed: %s", exc)

    def update(self, store: IndexStore, *, full: bool = True) -> Snapshot | None:
        """Catch the snapshot up with ``store``. ``full=False`` (the writer's call):
        never wait. If that needs reading everything, a background thread does it;
        if a background update is running (a full read takes ~40 s at a million
        chunks), it goes round once more when done (the writer waited for it: no
        indexing meanwhile, and a SIGTERM took 29 s).

        Never raises: the snapshot is a cache, not worth failing a writer task for,
        and never kept stale either. If catching up fails, it is dropped (searches
        read SQLite, which is always current, until a background read succeeds) and
        the error logged and kept in ``error``."""
        if not full:
            self._again = True  # before trying: a running update that ends now sees it
            if not self._lock.acquire(blocking=False):
                return self._snap
            self._again = False  # this call does it
        else:
            self._lock.acquire()
        try:
            return self._locked_update(store, full)
        finally:
            self._lock.release()

    def _locked_update(self, store: IndexStore, full: bool) -> Snapshot | None:
        try:
            snap = self._update(store, full)
        except Exception as exc:  # noqa: BLE001 - see update()
            self._snap = None
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("in-memory snapshot of %s dropped", store.generation)
            return None
        self.error = None
        return snap

    def _update(self, store: IndexStore, full: bool) -> Snapshot | None:
        old = self._snap
        versions = store.change_versions()  # read first: the parts are at least this new
        if old is not None and old.identity == store.identity and old.versions == versions:
            return old
        same = old if old is not None and old.identity == store.identity else None
        if same is None and not full:
            self._refresh.start(self._update_from, store.reopen)
            return old
        kw = same.keywords if same is not None else None
        vec = same.vectors if same is not None else None
        key = versions[2]
        if vec is not None and (key != vec.key or not store.has_vectors()):
            vec = None  # another model: the old vectors answer nothing
        read_all = same is None or (vec is None and key is not None and store.has_vectors())
        if not read_all and (kw is not None or vec is not None):
            got = self._apply(store, kw, vec)
            if got is None:
                read_all = True
            else:
                kw, vec = got
        if read_all:
            if not full:
                self._refresh.start(self._update_from, store.reopen)
                return old
            kw, vec = self._read_all(store, kw if same is not None else None, key)
        elif kw is None:
            kw = self._keywords(store)  # grown past min_chunks since?
        snap = Snapshot(store.identity, versions, kw, vec)
        self._snap = snap
        return snap

    def _apply(
        self, store: IndexStore, kw: KeywordPart | None, vec: VectorPart | None
    ) -> tuple[KeywordPart | None, VectorPart | None] | None:
        """Both parts caught up from the change feed, read in one transaction; None
        if the feed no longer reaches back to one of them."""
        seqs = [p.seq for p in (kw, vec) if p is not None]
        got = store.catch_up(min(seqs), None if kw is None else kw.max_id, vec is not None)
        if got is None:
            return None
        changes = got.changes
        if kw is not None:
            kw = kw.apply(changes.seq, [*changes.deleted, *changes.moved], got.new, self.tokens)
        if vec is not None:
            vec = vec.apply(changes.seq, [*changes.deleted, *changes.embedded], got.embedded)
        self.updates += 1
        return kw, vec

    def _read_all(
        self, store: IndexStore, kw: KeywordPart | None, key: str | None
    ) -> tuple[KeywordPart | None, VectorPart | None]:
        """The vectors read in full, the keyword postings too unless ``kw`` can be
        caught up; both brought to the same change feed position."""
        self.full_loads += 1
        vec = None
        if key is not None and store.has_vectors():
            vec = VectorPart.build(store, key, quantize_at=self.quantize_at)
        if kw is None:
            kw = self._keywords(store)
        release_freed_memory()  # what reading everything left behind in the heap
        if kw is None and vec is None:
            return None, None
        got = self._apply(store, kw, vec)
        if got is None:  # ``kw`` fell behind the pruned feed
            kw = self._keywords(store)
            got = self._apply(store, kw, vec) or (kw, vec)
        return got

    def _keywords(self, store: IndexStore) -> KeywordPart | None:
        with store.keyword_postings(self.min_chunks) as got:
            return None if got is None else KeywordPart.build(got)
