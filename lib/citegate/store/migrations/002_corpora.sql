-- 002: where each corpus came from, so an ingest from a different source cannot silently replace it.
-- origin: 'builtin:<build name>' or the resolved path of a user folder or file; NULL when unknown.
-- A corpus stored before this migration has no row here and counts as of unknown origin.
CREATE TABLE corpora (
    embedder_id  text NOT NULL REFERENCES embedders (id),
    corpus       text NOT NULL CHECK (length(corpus) > 0),
    origin       text CHECK (length(origin) > 0),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (embedder_id, corpus)
);
