-- KEYS: stream. ARGV: group. Deletes the group's consumers that hold no pending entry.
local dropped = 0
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local fields = {}
  for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
  if tonumber(fields['pending']) == 0 then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    dropped = dropped + 1
  end
end
return dropped
