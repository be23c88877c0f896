-- KEYS: likers, events, pending, written, subject open. ARGV: user id, 1 (like) | 0 (unlike),
-- comment id, 1 when the caller checked that the user may like the comment (else only an OPEN
-- comment of a subject marked open is liked), 1 when the caller read the subject open just now
-- (marked so unless it was just closed), the user's like row ('' when not read; UNLIKED for
-- none or inactive; else the like's time in ms: a partial state that has not met the user
-- takes it), the Redis time after which that row was read ('' for "some seconds ago", as
-- below); then, to create the state if it is missing (none: only answer), its flag, the Redis
-- time after which the rows were read ('' for "some seconds ago": then no flush of the comment
-- within ``WRITTEN_WINDOW_MS`` is allowed), the ttl, how many likers a partial state has not
-- met ('' for a whole state), and a whole state's likers as score, member pairs.
-- -> {count, liked, events in the stream now}; {ANSWER_COLD, now} when the state is missing
-- and the rows read from now on may create it (none were given, or the flush wrote to them
-- after they were read); {ANSWER_LOAD_CAREFULLY, 0} when it is missing and only the careful
-- load may (actions wait in the stream); {ANSWER_NEEDS_CHECK, 0} when the comment needs the
-- check; {ANSWER_NEEDS_USER, now} when the state is partial and needs the user's row read from
-- now on (``protocol.LikeOutcome``).
-- The action is appended even when it changes nothing here: the state may be behind the
-- database (written directly during an outage), and the flush applies the newest action.
local now = now_ms()
local function read_since(arg)
  if arg and arg ~= '' then return tonumber(arg) end
  return now - WRITTEN_WINDOW_MS
end
if ARGV[5] == '1' then redis.call('SET', KEYS[5], MARKED_OPEN, 'NX', 'EX', SUBJECT_OPEN_SECONDS) end
local flag = redis.call('ZSCORE', KEYS[1], SENTINEL)
if not flag then
  if not ARGV[8] then
    if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then return {ANSWER_LOAD_CAREFULLY, 0} end
    return {ANSWER_COLD, now}
  end
  if not may_create(KEYS[3], KEYS[4], ARGV[3], read_since(ARGV[9])) then
    -- Only the stream's actions need the careful load; rows read from now on hold the flushed.
    if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then return {ANSWER_LOAD_CAREFULLY, 0} end
    return {ANSWER_COLD, now}
  end
  create(KEYS[1], ARGV[8], ARGV[10], 12, ARGV[11])
  flag = ARGV[8]
end
if ARGV[4] ~= '1' and (tonumber(flag) ~= OPEN or redis.call('GET', KEYS[5]) ~= MARKED_OPEN) then
  return {ANSWER_NEEDS_CHECK, 0}
end
local unmet = not_met(KEYS[1])
local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
if unmet and not old then
  -- Met now. Its row is the truth if the flush wrote none of the comment's actions after it was
  -- read: every action of the comment since the state was made went through it, and none of
  -- this user's.
  if not ARGV[6] or ARGV[6] == '' or not written_before(KEYS[4], ARGV[3], read_since(ARGV[7])) then
    return {ANSWER_NEEDS_USER, now}
  end
  old = ARGV[6]
  redis.call('ZADD', KEYS[1], old, ARGV[1])
  if tonumber(old) >= 0 then
    unmet = unmet - 1
    redis.call('ZADD', KEYS[1], PARTIAL_BASE - unmet, PARTIAL)
  end
end
local at = now
if ARGV[2] == '1' then
  if old and tonumber(old) >= 0 then at = tonumber(old) else redis.call('ZADD', KEYS[1], at, ARGV[1]) end
elseif unmet then
  redis.call('ZADD', KEYS[1], UNLIKED, ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
redis.call('XADD', KEYS[2], '*', 'a', ARGV[3] .. ':' .. ARGV[1] .. ':' .. ARGV[2] .. ':' .. string.format('%d', at))
redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('PERSIST', KEYS[1])
return {count(KEYS[1], unmet), tonumber(ARGV[2]), redis.call('XLEN', KEYS[2])}
