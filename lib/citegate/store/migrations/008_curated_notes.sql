-- 008: curated notes. The `attributions` table of 001 was never written by any command; it is
-- replaced by the shape the notes file has (`citegate memory import`): one row per note, and
-- its trigger phrases and body chunks embedded per embedder in `attribution_units`. A database
-- where something did write the old table is refused, never emptied.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM attributions) THEN
        RAISE EXCEPTION 'attributions holds rows written outside citegate: move them aside before upgrading';
    END IF;
END $$;

DROP TABLE attributions;

CREATE TABLE attributions (
    id            bigserial PRIMARY KEY,
    note_key      text NOT NULL CHECK (note_key ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
    corpus        text NOT NULL CHECK (length(corpus) > 0),
    kind          text NOT NULL CHECK (kind IN ('pinned', 'boost', 'memory')),
    lang          text NOT NULL CHECK (length(lang) BETWEEN 2 AND 8),
    triggers      text[] NOT NULL CHECK (cardinality(triggers) >= 1),
    body          text NOT NULL CHECK (length(btrim(body)) > 0),
    cites         text[] NOT NULL DEFAULT '{}',
    author        text NOT NULL,
    written       date NOT NULL,
    source        text NOT NULL CHECK (length(source) > 0),
    content_hash  text NOT NULL CHECK (length(content_hash) = 64),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (corpus, note_key),
    CHECK (kind = 'memory' OR cardinality(cites) >= 1)
);
CREATE INDEX attributions_source ON attributions (corpus, source);

CREATE TABLE attribution_units (
    id              bigserial PRIMARY KEY,
    attribution_id  bigint NOT NULL REFERENCES attributions (id) ON DELETE CASCADE,
    unit            text NOT NULL CHECK (unit IN ('trigger', 'body')),
    ord             integer NOT NULL CHECK (ord >= 0),
    text            text NOT NULL CHECK (length(btrim(text)) > 0),
    embedder_id     text NOT NULL,
    dim             integer NOT NULL,
    embedding       vector NOT NULL CHECK (vector_dims(embedding) = dim),
    FOREIGN KEY (embedder_id, dim) REFERENCES embedders (id, dim),
    UNIQUE (attribution_id, embedder_id, unit, ord)
);
CREATE INDEX attribution_units_embedder ON attribution_units (embedder_id, attribution_id);
