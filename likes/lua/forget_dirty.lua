-- KEYS: dirty set. ARGV: subject id, score seen. Forgets a drained subject unless an event
-- came in since its score was read.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) <= tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
