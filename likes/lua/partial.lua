-- Partial states (``protocol.PARTIAL``): ``not_met`` is how many likers the state has not met, nil
-- for a whole state; ``count`` the comment's likes either way.
local function not_met(likers)
  local marker = redis.call('ZSCORE', likers, PARTIAL)
  if marker then return PARTIAL_BASE - tonumber(marker) end
  return nil
end
local function count(likers, unmet)
  if unmet then return redis.call('ZCOUNT', likers, 0, '+inf') + unmet end
  return redis.call('ZCARD', likers) - 1
end
