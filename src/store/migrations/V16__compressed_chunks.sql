-- History chunks of COMPRESS_FROM_BYTES or more (store/events.rs) are stored as BLOBs: the
-- chunk's text compressed with LZ4 (block format, its length first as 4 bytes little-endian).
-- A state's output is the next state's input and every Map iteration repeats the same names and
-- shapes, so the Map of 10,000 items stores a ninth of its text. Shorter chunks, and every chunk
-- an older build wrote, stay TEXT; this build reads both. The schema itself does not change: the
-- version moves so that an older build, which would read a BLOB chunk as malformed text, refuses
-- the database instead.
SELECT 1;
