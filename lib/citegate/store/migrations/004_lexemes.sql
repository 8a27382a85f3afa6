-- 004: document frequencies of each corpus build's lexemes, for the lexical lane's tiers: with
-- `lexical_budget` set it searches with the question's rarest terms first and ranks only the
-- rows they match, instead of ranking every row that shares any word with the question.
-- Rewritten whole by `tables.refresh_lexemes` in the transaction of an ingest's last write.
CREATE TABLE IF NOT EXISTS lexemes (
    embedder_id text NOT NULL,
    corpus      text NOT NULL,
    config      text NOT NULL,  -- the tsvector it counts: 'russian' (tsv_russian) or 'simple'
    lexeme      text NOT NULL,
    ndoc        integer NOT NULL,  -- fragments of the build whose tsvector holds the lexeme
    PRIMARY KEY (embedder_id, corpus, config, lexeme)
);
