-- 001: fragments, embedders, attributions; lexical and address indexes.
-- Dense (HNSW) indexes are per embedder and are created by citegate.db.ensure_embedder,
-- because an HNSW index needs a fixed dimension and vectors of two embedders must never share one.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE embedders (
    id          text PRIMARY KEY,
    dim         integer NOT NULL CHECK (dim BETWEEN 1 AND 16000),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (id, dim)
);

CREATE TABLE fragments (
    id            bigserial PRIMARY KEY,
    frag_key      text NOT NULL CHECK (length(frag_key) > 0),
    corpus        text NOT NULL CHECK (length(corpus) > 0),
    kind          text NOT NULL CHECK (kind IN
                    ('track_transcript', 'verse', 'commentary', 'prose_chapter', 'letter')),
    source_id     text NOT NULL CHECK (length(source_id) > 0),
    track_id      text,
    start_ms      integer CHECK (start_ms >= 0),
    end_ms        integer,
    book          text,
    loc_token     text,
    addr_label    text,
    text          text NOT NULL CHECK (length(btrim(text)) > 0),
    lang          text NOT NULL CHECK (length(lang) BETWEEN 2 AND 8),
    tokens        text NOT NULL DEFAULT '',
    content_hash  text NOT NULL CHECK (length(content_hash) = 64),
    embedder_id   text NOT NULL,
    dim           integer NOT NULL,
    embedding     vector NOT NULL CHECK (vector_dims(embedding) = dim),
    created_at    timestamptz NOT NULL DEFAULT now(),
    addr_search   text GENERATED ALWAYS AS
                    (coalesce(addr_label, '') || ' ' || source_id || ' ' || tokens) STORED,
    tsv_russian   tsvector GENERATED ALWAYS AS (to_tsvector('russian'::regconfig, text)) STORED,
    tsv_simple    tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, text)) STORED,
    FOREIGN KEY (embedder_id, dim) REFERENCES embedders (id, dim),
    UNIQUE (embedder_id, corpus, frag_key),
    -- a transcript fragment is exactly a span of one track; library text has no span but an address
    CONSTRAINT transcript_has_span CHECK (
        (kind = 'track_transcript') = (track_id IS NOT NULL AND start_ms IS NOT NULL AND end_ms IS NOT NULL)),
    CONSTRAINT span_ordered CHECK (end_ms IS NULL OR end_ms > start_ms),
    CONSTRAINT library_has_address CHECK (kind = 'track_transcript' OR addr_label IS NOT NULL)
);

CREATE INDEX fragments_corpus_kind ON fragments (embedder_id, corpus, kind);
CREATE INDEX fragments_addr_trgm ON fragments USING gin (addr_search gin_trgm_ops);
CREATE INDEX fragments_tsv_russian ON fragments USING gin (tsv_russian);
CREATE INDEX fragments_tsv_simple ON fragments USING gin (tsv_simple);

-- Curated memory: a human pins, boosts or remembers a fragment (or a bare address) for a topic.
CREATE TABLE attributions (
    id           bigserial PRIMARY KEY,
    mode         text NOT NULL CHECK (mode IN ('pinned', 'boost', 'memory')),
    topic        text NOT NULL CHECK (length(btrim(topic)) > 0),
    corpus       text NOT NULL,
    addr_label   text,
    frag_key     text,
    note         text NOT NULL DEFAULT '',
    weight       real NOT NULL DEFAULT 1.0 CHECK (weight > 0),
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (addr_label IS NOT NULL OR frag_key IS NOT NULL)
);
CREATE INDEX attributions_topic_trgm ON attributions USING gin (topic gin_trgm_ops);
