-- Redis's clock in ms, for the scripts that read or record it (WRITTEN_WINDOW_MS comes from
-- live.py, which puts the constants it shares with the scripts before every script).
local function now_ms()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
