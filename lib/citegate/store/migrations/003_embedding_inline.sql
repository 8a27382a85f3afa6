-- 003: keep each vector in its heap row (storage MAIN) rather than out of line in the TOAST table.
-- A fragment row with its text and two tsvectors passes the 2 kB TOAST threshold, and the vector
-- (4 * dim + 8 bytes, which does not compress) was the column moved out, so every exact cosine
-- fetched it back from TOAST: the dense lane over the 3,505 gita verses read 21,757 buffers.
-- MAIN moves a vector out only when the row cannot fit otherwise. No stored value changes.
-- It applies to rows written from now on; existing rows move inline at their next rewrite
-- (`VACUUM FULL fragments`, or a re-ingest).
ALTER TABLE fragments ALTER COLUMN embedding SET STORAGE MAIN;
