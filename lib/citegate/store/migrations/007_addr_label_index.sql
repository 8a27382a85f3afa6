-- 007: a btree over (embedder_id, corpus, addr_label) for the exact-address and named lanes
-- (`addr_label = ANY(labels)`), which had only the pg_trgm index over `addr_search`: without it
-- they read every row of the searched builds, 41 ms a question at 100k fragments (`citegate
-- bench-scale`), growing with the corpus.
CREATE INDEX IF NOT EXISTS fragments_addr_label ON fragments (embedder_id, corpus, addr_label);
