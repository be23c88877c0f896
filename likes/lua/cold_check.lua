-- KEYS: pending, likers. ARGV: comment id.
-- -> {1 when only the careful load may make the state (an action of the comment waits in the
-- stream, or a partial state is there, for the build to lay over the rows), else 0; Redis time
-- in ms}.
local careful = redis.call('HEXISTS', KEYS[1], ARGV[1])
if careful == 0 and redis.call('ZSCORE', KEYS[2], PARTIAL) then careful = 1 end
return {careful, now_ms()}
