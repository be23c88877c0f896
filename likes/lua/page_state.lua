-- KEYS: likers of several comments of one subject. ARGV: viewer's user id or ''.
-- -> {count + 1, liked} per key: count + 1 is 0 when the state is not loaded; liked is 1 or
-- 0, or VIEWER_NOT_MET when a partial state has not met the viewer (the database knows).
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('ZCARD', key)
  local liked = 0
  if n > 0 then
    local unmet = not_met(key)
    local score = ARGV[1] ~= '' and redis.call('ZSCORE', key, ARGV[1])
    if unmet then
      n = count(key, unmet) + 1
      if score then
        if tonumber(score) >= 0 then liked = 1 end
      elseif ARGV[1] ~= '' then
        liked = VIEWER_NOT_MET
      end
    elseif score then
      liked = 1
    end
  end
  out[2 * i - 1] = n
  out[2 * i] = liked
end
return out
