-- 006: one partial HNSW index per embedder and kind group instead of one per embedder.
-- The dense lane always searches one kind group; over one index for every kind, a search of a
-- small group (transcripts, 3% of the scale bench's rows) walks the graph past every row of the
-- other kinds before enough of its own pass the filter. Names and predicates are those
-- `store.db.ensure_embedder` creates (`hnsw_index_name`, `kinds_array`; the groups are
-- `core.types.KIND_GROUPS`), so the planner proves the lane's WHERE implies an index's predicate.
DO $$
DECLARE
    e record;
    g record;
    tag text;
BEGIN
    FOR e IN SELECT id, dim FROM embedders ORDER BY id LOOP
        tag := substr(encode(sha256(convert_to(e.id, 'UTF8')), 'hex'), 1, 12);
        FOR g IN SELECT * FROM (VALUES
            ('transcripts', '{track_transcript}'),
            ('verses', '{verse}'),
            ('library', '{commentary,prose_chapter,letter}')) AS t(name, kinds)
        LOOP
            EXECUTE format(
                'CREATE INDEX IF NOT EXISTS %I ON fragments USING hnsw '
                '((embedding::vector(%s)) vector_cosine_ops) '
                'WHERE embedder_id = %L AND kind = ANY (%L::text[])',
                'fragments_hnsw_' || tag || '_' || g.name, e.dim, e.id, g.kinds);
        END LOOP;
        EXECUTE format('DROP INDEX IF EXISTS %I', 'fragments_hnsw_' || tag);
    END LOOP;
END $$;
