-- Shared by the scripts that create a comment's state from rows read by the caller (needs
-- clock.lua). written_before: the flush wrote none of the comment's actions to the rows after
-- ``since`` (Redis ms). may_create: that, and no action of the comment waits in the stream:
-- then the rows read after ``since`` are the whole truth, because no action can be appended
-- while the state is missing.
local function written_before(written, comment, since)
  local at = redis.call('ZSCORE', written, comment)
  return not (at and tonumber(at) >= since)
end
local function may_create(pending, written, comment, since)
  if redis.call('HEXISTS', pending, comment) == 1 then return false end
  return written_before(written, comment, since)
end
-- The sentinel with its flag, then the likers: ARGV from ``first`` on, as score, member pairs;
-- with ``unmet`` (not nil or ''), a partial state of that many likers not met, and no pairs.
local function create(likers, flag, ttl, first, unmet)
  redis.call('ZADD', likers, flag, SENTINEL)
  if unmet and unmet ~= '' then redis.call('ZADD', likers, PARTIAL_BASE - tonumber(unmet), PARTIAL) end
  for i = first, #ARGV, 2000 do
    redis.call('ZADD', likers, unpack(ARGV, i, math.min(i + 1999, #ARGV)))
  end
  redis.call('EXPIRE', likers, ttl)
end
