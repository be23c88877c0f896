-- KEYS: pending. ARGV: comment id.
-- -> {1 when an action of the comment waits in the stream, else 0; Redis time in ms}.
return {redis.call('HEXISTS', KEYS[1], ARGV[1]), now_ms()}
