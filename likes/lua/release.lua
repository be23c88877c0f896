-- KEYS: lock. ARGV: token. Releases the lock only if it is still ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
