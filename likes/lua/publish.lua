-- KEYS: build key, likers, pending. ARGV: ttl seconds, comment id. Moves a finished rebuild
-- into place unless a concurrent one got there first; over a partial state, whose members are
-- newer than the rows the build read (every action since the partial state was made went
-- through it), after laying them over the build, with its flag. -> 1 when placed.
--
-- A state with actions waiting in the stream has no expiry until the flush wrote them: expired
-- meanwhile, the next load would read rows that lack those actions. The pending count says so
-- (the like script keeps it, the flush's acknowledgement lowers it), whatever state was there.
local function place()
  redis.call('RENAME', KEYS[1], KEYS[2])
  if tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or 0) > 0 then
    redis.call('PERSIST', KEYS[2])
  else
    redis.call('EXPIRE', KEYS[2], ARGV[1])
  end
  return 1
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  return place()
end
if not redis.call('ZSCORE', KEYS[2], PARTIAL) then
  redis.call('DEL', KEYS[1])
  return 0
end
local met = redis.call('ZRANGEBYSCORE', KEYS[2], UNLIKED, '+inf', 'WITHSCORES')
for i = 1, #met, 2 do
  if met[i] == SENTINEL or tonumber(met[i + 1]) >= 0 then
    redis.call('ZADD', KEYS[1], met[i + 1], met[i])
  else
    redis.call('ZREM', KEYS[1], met[i])
  end
end
return place()
