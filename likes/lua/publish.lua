-- KEYS: build key, likers. ARGV: ttl seconds. Moves a finished rebuild into place unless a
-- concurrent one got there first. -> 1 when placed.
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('EXPIRE', KEYS[2], ARGV[1])
  return 1
end
redis.call('DEL', KEYS[1])
return 0
