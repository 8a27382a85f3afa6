-- 005: each corpus build's fragment-set digest (`tables.fragment_sets`: row count and md5 over
-- "id:content_hash"), stamped in the transaction of an ingest's last write, so an index kept
-- outside the database (the BM25 lexical backend's, `store.bm25`) is named by the rows it holds
-- without recounting a large build on every query.
CREATE TABLE IF NOT EXISTS fragment_stamps (
    embedder_id  text NOT NULL,
    corpus       text NOT NULL,
    fragment_set text NOT NULL,
    PRIMARY KEY (embedder_id, corpus)
);
