-- Redis's clock in ms, for the scripts that read or record it (WRITTEN_WINDOW_MS, as every
-- constant the scripts share with Python, comes from protocol.py's prelude: LUA_CONSTANTS).
local function now_ms()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
