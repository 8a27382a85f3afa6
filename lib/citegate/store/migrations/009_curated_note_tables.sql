-- 009: the curated notes' tables are named after what they hold (docs/pages/glossary.md):
-- `curated_notes` (one row per note of a notes file) and `curated_note_units` (its trigger
-- phrases and body chunks, embedded per embedder), whose `note_id` points at its note. A rename,
-- so every stored note, unit and id is kept; the sequences, indexes and constraints follow the
-- tables' names, so nothing in the schema carries another name for them.
ALTER TABLE attributions RENAME TO curated_notes;
ALTER TABLE attribution_units RENAME TO curated_note_units;
ALTER TABLE curated_note_units RENAME COLUMN attribution_id TO note_id;
ALTER SEQUENCE attributions_id_seq RENAME TO curated_notes_id_seq;
ALTER SEQUENCE attribution_units_id_seq RENAME TO curated_note_units_id_seq;
ALTER INDEX attributions_source RENAME TO curated_notes_source;
ALTER INDEX attribution_units_embedder RENAME TO curated_note_units_embedder;

-- Every constraint PostgreSQL named after the tables (primary and unique keys, whose indexes
-- take the new name with them, checks and foreign keys), renamed the same way.
DO $$
DECLARE
    r record;
    renamed text;
BEGIN
    FOR r IN
        SELECT c.conname, c.conrelid::regclass AS tbl
        FROM pg_constraint c
        WHERE c.conrelid IN ('curated_notes'::regclass, 'curated_note_units'::regclass)
          AND c.conname LIKE 'attribution%'
    LOOP
        renamed := replace(r.conname, 'attribution_units_', 'curated_note_units_');
        renamed := replace(renamed, 'attribution_id', 'note_id');
        renamed := replace(renamed, 'attributions_', 'curated_notes_');
        EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.tbl, r.conname, renamed);
    END LOOP;
END $$;
