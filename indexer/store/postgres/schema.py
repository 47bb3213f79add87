"""The PostgreSQL schema: named, append-only migrations, as on SQLite.

Every row but the shared embedding cache carries the agent id and the generation
(``gen``) it belongs to, first in its primary key, so the tables can be distributed
by agent id (Citus: ``create_distributed_table('chunks', 'agent')``). The agent's
published generation is one row of ``agents``: publishing a rebuild is one UPDATE.

Keyword search is BM25 over ``chunk_terms`` (since 0003; ``postings`` before): one
row per chunk with its tokens (FTS5's own porter/unicode61 tokens, made in Python when
the chunk is written) — its distinct terms, each term's count and positions in the
body, and the heading's, path's and source's tokens in order — so phrases match as
on SQLite. A GIN index holds the terms as 64-bit hashes of (agent, generation, term)
(``memindex_term_hash``, made by the server): a term's entry holds only its own
generation's rows however many agents share the database, and a row's term is found
by comparing integers (two words of one generation with the same 64-bit hash, about
one chance in 10^9 for a vocabulary of 100,000 words, would share their rows). One
row per chunk instead of one per chunk, column and token (about 130) made
PostgreSQL's indexing 4x cheaper (a btree entry per token against a GIN's batched
pending list). ``chunks.dl`` is a chunk's length in tokens over all columns (FTS5's
document length). Vectors are kept twice: as pgvector ``vector`` (searched) and as
the float32 bytes SQLite stores (read by the in-memory snapshot without parsing
text).
"""

from __future__ import annotations

__all__ = ["PG_MIGRATIONS"]

PG_MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE EXTENSION IF NOT EXISTS vector;
        CREATE TABLE agents(
            agent TEXT PRIMARY KEY,
            published BIGINT NOT NULL,
            writer TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE generations(
            agent TEXT NOT NULL,
            gen BIGINT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY(agent, gen)
        );
        CREATE TABLE meta(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
            PRIMARY KEY(agent, gen, key)
        );
        CREATE TABLE files(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, path TEXT NOT NULL,
            source TEXT NOT NULL, hash TEXT NOT NULL, mtime_ns BIGINT NOT NULL,
            size BIGINT NOT NULL, lines INTEGER NOT NULL, indexed_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY(agent, gen, path)
        );
        CREATE SEQUENCE chunk_ids;
        CREATE TABLE chunks(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, id BIGINT NOT NULL,
            path TEXT NOT NULL, source TEXT NOT NULL,
            start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
            heading TEXT NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL,
            dl INTEGER NOT NULL, embedded BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY(agent, gen, id)
        );
        CREATE INDEX chunks_by_path ON chunks(agent, gen, path);
        CREATE INDEX chunks_by_hash ON chunks(agent, gen, hash);
        CREATE INDEX chunks_pending ON chunks(agent, gen, id) WHERE NOT embedded;
        CREATE TABLE postings(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, term TEXT NOT NULL,
            id BIGINT NOT NULL, col SMALLINT NOT NULL, positions INTEGER[] NOT NULL,
            PRIMARY KEY(agent, gen, term, id, col)
        );
        CREATE INDEX postings_by_chunk ON postings(agent, gen, id);
        CREATE TABLE chunk_vectors(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, id BIGINT NOT NULL,
            dims INTEGER NOT NULL, vec BYTEA NOT NULL, embedding vector NOT NULL,
            PRIMARY KEY(agent, gen, id)
        );
        CREATE TABLE chunk_changes(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, seq BIGSERIAL,
            chunk BIGINT NOT NULL, kind SMALLINT NOT NULL,
            PRIMARY KEY(agent, gen, seq)
        );
        CREATE TABLE session_cursors(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, path TEXT NOT NULL,
            dev BIGINT NOT NULL, ino BIGINT NOT NULL, committed BIGINT NOT NULL,
            lines BIGINT NOT NULL, updated_at DOUBLE PRECISION NOT NULL, head TEXT NOT NULL,
            head_len INTEGER NOT NULL, malformed INTEGER NOT NULL,
            PRIMARY KEY(agent, gen, path)
        );
        CREATE TABLE skipped(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, path TEXT NOT NULL,
            source TEXT NOT NULL, reason TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY(agent, gen, path)
        );
        CREATE TABLE batch_jobs(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, id TEXT NOT NULL,
            provider TEXT NOT NULL, hashes TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL, polled_at DOUBLE PRECISION,
            PRIMARY KEY(agent, gen, id)
        );
        -- Shared by every agent: a chunk embedded by one host is never embedded again.
        CREATE TABLE embedding_cache(
            provider TEXT NOT NULL, hash TEXT NOT NULL, dims INTEGER NOT NULL,
            vector BYTEA NOT NULL, last_used DOUBLE PRECISION NOT NULL,
            PRIMARY KEY(provider, hash)
        );
        CREATE INDEX embedding_cache_lru ON embedding_cache(last_used);
        -- The change feed, as SQLite's triggers write it (kind 0 deleted, 1 embedded,
        -- 2 moved).
        CREATE FUNCTION memindex_chunk_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                INSERT INTO chunk_changes(agent, gen, chunk, kind)
                VALUES (OLD.agent, OLD.gen, OLD.id, 0);
                RETURN OLD;
            END IF;
            INSERT INTO chunk_changes(agent, gen, chunk, kind)
            VALUES (NEW.agent, NEW.gen, NEW.id, TG_ARGV[0]::smallint);
            RETURN NEW;
        END $$;
        CREATE TRIGGER chunks_deleted AFTER DELETE ON chunks
        FOR EACH ROW EXECUTE FUNCTION memindex_chunk_changed('0');
        CREATE TRIGGER chunks_embedded AFTER UPDATE OF embedded ON chunks
        FOR EACH ROW WHEN (NEW.embedded) EXECUTE FUNCTION memindex_chunk_changed('1');
        CREATE TRIGGER chunks_moved AFTER UPDATE OF path ON chunks
        FOR EACH ROW EXECUTE FUNCTION memindex_chunk_changed('2');
        """,
    ),
    (
        "0002_chunk_lines",
        """
        ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lines TEXT;
        """,
    ),
    (
        "0003_chunk_terms",
        """
        -- a term of an agent's generation as the index holds it (PostgreSQL's own
        -- 64-bit text hash: stable across versions, as hash partitions need)
        CREATE FUNCTION memindex_term_hash(agent TEXT, gen BIGINT, term TEXT) RETURNS BIGINT
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS
        $$ SELECT hashtextextended(agent || '/' || gen::text || '/' || term, 0) $$;
        CREATE TABLE chunk_terms(
            agent TEXT NOT NULL, gen BIGINT NOT NULL, id BIGINT NOT NULL,
            terms TEXT[] NOT NULL,      -- distinct tokens of every column
            hashes BIGINT[] NOT NULL,   -- the terms' memindex_term_hash, in that order
            body INTEGER[] NOT NULL,    -- per term: its occurrences in the body
            pos INTEGER[] NOT NULL,     -- the body positions, term after term
            heading TEXT[] NOT NULL, path TEXT[] NOT NULL, source TEXT[] NOT NULL,
            PRIMARY KEY(agent, gen, id)
        );
        -- rows of a few kB stay in the table as they are (compressed into TOAST from
        -- 2 kB by default: CPU on every write and every search that reads them)
        ALTER TABLE chunk_terms SET (toast_tuple_target = 8160);
        -- no planner statistics of arrays and texts no query filters on (ANALYZE of
        -- their elements cost as much server time as indexing under a fleet's load)
        ALTER TABLE chunk_terms ALTER COLUMN terms SET STATISTICS 0,
            ALTER COLUMN hashes SET STATISTICS 0, ALTER COLUMN body SET STATISTICS 0,
            ALTER COLUMN pos SET STATISTICS 0, ALTER COLUMN heading SET STATISTICS 0,
            ALTER COLUMN path SET STATISTICS 0, ALTER COLUMN source SET STATISTICS 0;
        ALTER TABLE chunks ALTER COLUMN text SET STATISTICS 0,
            ALTER COLUMN heading SET STATISTICS 0, ALTER COLUMN lines SET STATISTICS 0;
        INSERT INTO chunk_terms(agent, gen, id, terms, hashes, body, pos, heading, path,
                                source)
        WITH b AS (
            SELECT agent, gen, id, term,
                   coalesce(max(positions) FILTER (WHERE col = 0), '{}') AS p
            FROM postings GROUP BY agent, gen, id, term
        ), t AS (
            SELECT agent, gen, id,
                   array_agg(term ORDER BY term) AS terms,
                   array_agg(memindex_term_hash(agent, gen, term) ORDER BY term) AS hashes,
                   array_agg(cardinality(p) ORDER BY term) AS body
            FROM b GROUP BY agent, gen, id
        ), f AS (
            SELECT agent, gen, id, array_agg(x ORDER BY term, o) AS pos
            FROM b, unnest(p) WITH ORDINALITY u(x, o) GROUP BY agent, gen, id
        ), r AS (
            SELECT agent, gen, id,
                   array_agg(term ORDER BY x) FILTER (WHERE col = 1) AS heading,
                   array_agg(term ORDER BY x) FILTER (WHERE col = 2) AS path,
                   array_agg(term ORDER BY x) FILTER (WHERE col = 3) AS source
            FROM postings, unnest(positions) x WHERE col > 0 GROUP BY agent, gen, id
        )
        SELECT t.agent, t.gen, t.id, t.terms, t.hashes, t.body, coalesce(f.pos, '{}'),
               coalesce(r.heading, '{}'), coalesce(r.path, '{}'), coalesce(r.source, '{}')
        FROM t LEFT JOIN f USING (agent, gen, id) LEFT JOIN r USING (agent, gen, id);
        CREATE INDEX chunk_terms_hashes ON chunk_terms USING gin(hashes);
        DROP TABLE postings;
        """,
    ),
    (
        "0004_chunk_at",
        """
        -- transcript chunks: their newest message's time (records.ChunkRow.at)
        ALTER TABLE chunks ADD COLUMN IF NOT EXISTS at DOUBLE PRECISION;
        CREATE INDEX chunks_by_at ON chunks(agent, gen, at) WHERE at IS NOT NULL;
        """,
    ),
    (
        "0005_chunk_origin",
        """
        -- transcript chunks: OpenClaw's provenance (records.ChunkRow.origin)
        ALTER TABLE chunks ADD COLUMN IF NOT EXISTS origin TEXT;
        """,
    ),
]
