-- KEYS: likers of several comments of one subject. ARGV: viewer's user id or ''.
-- -> {cardinality, liked (0/1)} per key; cardinality 0: not loaded.
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('ZCARD', key)
  out[2 * i - 1] = n
  out[2 * i] = 0
  if n > 0 and ARGV[1] ~= '' and redis.call('ZSCORE', key, ARGV[1]) then out[2 * i] = 1 end
end
return out
