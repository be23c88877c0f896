-- KEYS: stream, pending, written, then the likers of each comment whose entries are
-- acknowledged. ARGV: consumer group, ttl, t (how many such comments), then t pairs (comment
-- id, how many of its entries), then those entries' ids, comment by comment, then the ids of
-- entries that are no action. Acknowledges and deletes the entries; an entry deleted here
-- (not already by another flush that applied it too) is no longer pending for its comment; a
-- comment with no action left waiting may expire again, and is remembered as just written.
local now = now_ms()
local group, ttl, t = ARGV[1], ARGV[2], tonumber(ARGV[3])
local at = 4 + 2 * t
for j = 1, t do
  local comment, n = ARGV[2 + 2 * j], tonumber(ARGV[3 + 2 * j])
  local gone = 0
  for i = at, at + n - 1 do
    redis.call('XACK', KEYS[1], group, ARGV[i])
    gone = gone + redis.call('XDEL', KEYS[1], ARGV[i])
  end
  at = at + n
  local left = tonumber(redis.call('HGET', KEYS[2], comment) or 0) - gone
  if left > 0 then
    redis.call('HSET', KEYS[2], comment, left)
  else
    redis.call('HDEL', KEYS[2], comment)
    redis.call('EXPIRE', KEYS[3 + j], ttl)
  end
  redis.call('ZADD', KEYS[3], now, comment)
end
for i = at, #ARGV do
  redis.call('XACK', KEYS[1], group, ARGV[i])
  redis.call('XDEL', KEYS[1], ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - WRITTEN_WINDOW_MS)
redis.call('PEXPIRE', KEYS[3], WRITTEN_WINDOW_MS)  -- a subject gone quiet keeps nothing
return 1
