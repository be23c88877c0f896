-- KEYS: likers. ARGV: after score ('' for the first page), after member, n.
-- -> {flag, member, score, ...}: the sentinel's flag (OPEN or CHECK), then up to n + 1 likers
-- after (score, member) in the set's order; nil when the whole state is not loaded (a partial
-- one is not: ``protocol.PARTIAL``). Rank 0 is the sentinel.
local flag = redis.call('ZSCORE', KEYS[1], SENTINEL)
if not flag or redis.call('ZSCORE', KEYS[1], PARTIAL) then return false end
local n = tonumber(ARGV[3])
local start, ties, after = 1, 0, nil
if ARGV[1] ~= '' then
  after = tonumber(ARGV[1])
  start = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[1])
  ties = redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[1])
end
local rows = redis.call('ZRANGE', KEYS[1], start, start + ties + n, 'WITHSCORES')
local out = {flag}
for i = 1, #rows, 2 do
  if not (after and tonumber(rows[i + 1]) == after and rows[i] <= ARGV[2]) then
    out[#out + 1] = rows[i]
    out[#out + 1] = rows[i + 1]
    if #out > 2 * (n + 1) then break end
  end
end
return out
