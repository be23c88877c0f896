-- KEYS: likers, pending, written. ARGV: comment id, flag, Redis time after which the rows were
-- read, ttl seconds, then score, member, score, member ...
-- Creates a comment's whole state unless it exists (a concurrent load got there first: 0) or
-- the rows may be behind (see ``may_create``), or a partial state is there (the careful load
-- builds over it): CREATE_REFUSED. -> 1 if made.
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('ZSCORE', KEYS[1], PARTIAL) then return CREATE_REFUSED end
  return 0
end
if not may_create(KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[3])) then return CREATE_REFUSED end
create(KEYS[1], ARGV[2], ARGV[4], 5)
return 1
