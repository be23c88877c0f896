-- KEYS: likers, events, pending, written, subject open. ARGV: user id, 1 (like) | 0 (unlike),
-- comment id, 1 when the caller checked that the user may like the comment (else only an OPEN
-- comment of a subject marked open is liked), 1 when the caller read the subject open just now
-- (marked so unless it was just closed); then, to create the state if it is missing (none: only
-- answer), its flag, the Redis time after which the rows were read ('' for "some seconds ago":
-- then no flush of the comment within ``WRITTEN_WINDOW_MS`` is allowed), the ttl, and the likers
-- as score, member pairs.
-- -> {count, liked, events in the stream now}; {-1, now} when the state is missing and the
-- rows read from now on may create it; {-3, 0} when it is missing and only the careful load
-- may (actions wait in the stream, or were flushed after the rows were read); {-2, 0} when
-- the comment needs the check.
-- The action is appended even when it changes nothing here: the state may be behind the
-- database (written directly during an outage), and the flush applies the newest action.
local now = now_ms()
if ARGV[5] == '1' then redis.call('SET', KEYS[5], '1', 'NX', 'EX', SUBJECT_OPEN_SECONDS) end
local flag = redis.call('ZSCORE', KEYS[1], '0')
if not flag then
  if not ARGV[6] then
    if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then return {-3, 0} end
    return {-1, now}
  end
  local since = now - WRITTEN_WINDOW_MS
  if ARGV[7] ~= '' then since = tonumber(ARGV[7]) end
  if not may_create(KEYS[3], KEYS[4], ARGV[3], since) then return {-3, 0} end
  create(KEYS[1], ARGV[6], ARGV[8], 9)
  flag = ARGV[6]
end
if ARGV[4] ~= '1' and (tonumber(flag) ~= -1 or redis.call('GET', KEYS[5]) ~= '1') then return {-2, 0} end
local at = now
if ARGV[2] == '1' then
  local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if old then at = tonumber(old) else redis.call('ZADD', KEYS[1], at, ARGV[1]) end
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
redis.call('XADD', KEYS[2], '*', 'a', ARGV[3] .. ':' .. ARGV[1] .. ':' .. ARGV[2] .. ':' .. string.format('%d', at))
redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('PERSIST', KEYS[1])
return {redis.call('ZCARD', KEYS[1]) - 1, tonumber(ARGV[2]), redis.call('XLEN', KEYS[2])}
