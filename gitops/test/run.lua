-- Runs the Argo CD health checks (gitops/argocd/health/mcpgov.io/<Kind>/health.lua)
-- over the status fixtures listed in gitops/test/expected.json, the way Argo CD does:
-- the script body runs with a global `obj` (the live object) and returns hs.
--
--   lua5.4 gitops/test/run.lua GITOPS_DIR      (also runs under lua5.1: Argo CD's
--                                               gopher-lua follows Lua 5.1)
--
-- Prints one line per case and, last, `RESULT <interpreter> passed=N failed=N`.
-- Self-contained: a small JSON reader is below (no lua-cjson needed).

local root = arg[1] or "gitops"

local function read(path)
  local f, err = io.open(path, "rb")
  if not f then
    error(err, 0)
  end
  local s = f:read("*a")
  f:close()
  return s
end

---------------------------------------------------------------------------------------
-- JSON → Lua tables. Objects and arrays become tables, null becomes nil (an absent
-- field, as Argo CD hands a Lua script), numbers go through tonumber (integers stay
-- integers on Lua 5.3+, so tostring(1) is "1" as in gopher-lua).

local decode

local function utf8_char(cp)
  if cp < 0x80 then
    return string.char(cp)
  elseif cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 0x40), 0x80 + cp % 0x40)
  elseif cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 0x1000), 0x80 + math.floor(cp / 0x40) % 0x40,
      0x80 + cp % 0x40)
  end
  return string.char(0xF0 + math.floor(cp / 0x40000), 0x80 + math.floor(cp / 0x1000) % 0x40,
    0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
end

do
  local s, pos

  local function fail(what)
    error(string.format("JSON: %s at byte %d", what, pos), 0)
  end

  local function skip()
    pos = string.find(s, "[^ \t\r\n]", pos) or (#s + 1)
  end

  local value

  local function str()
    pos = pos + 1 -- opening quote
    local parts = {}
    while true do
      local a, b = string.find(s, '["\\]', pos)
      if not a then
        fail("unterminated string")
      end
      parts[#parts + 1] = string.sub(s, pos, a - 1)
      if string.sub(s, a, a) == '"' then
        pos = a + 1
        return table.concat(parts)
      end
      local e = string.sub(s, a + 1, a + 1)
      local simple = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f",
        n = "\n", r = "\r", t = "\t" }
      if simple[e] then
        parts[#parts + 1] = simple[e]
        pos = a + 2
      elseif e == "u" then
        local cp = tonumber(string.sub(s, a + 2, a + 5), 16) or fail("bad \\u escape")
        pos = a + 6
        if cp >= 0xD800 and cp < 0xDC00 and string.sub(s, pos, pos + 1) == "\\u" then
          local low = tonumber(string.sub(s, pos + 2, pos + 5), 16)
          if low and low >= 0xDC00 and low < 0xE000 then
            cp = 0x10000 + (cp - 0xD800) * 0x400 + (low - 0xDC00)
            pos = pos + 6
          end
        end
        parts[#parts + 1] = utf8_char(cp)
      else
        fail("bad escape")
      end
    end
  end

  local function num()
    local a, b = string.find(s, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if not a then
      fail("bad number")
    end
    local n = tonumber(string.sub(s, a, b)) or fail("bad number")
    pos = b + 1
    return n
  end

  value = function()
    skip()
    local c = string.sub(s, pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1
      skip()
      if string.sub(s, pos, pos) == "}" then
        pos = pos + 1
        return t
      end
      while true do
        skip()
        if string.sub(s, pos, pos) ~= '"' then
          fail("expected a key")
        end
        local k = str()
        skip()
        if string.sub(s, pos, pos) ~= ":" then
          fail("expected ':'")
        end
        pos = pos + 1
        t[k] = value()
        skip()
        local d = string.sub(s, pos, pos)
        pos = pos + 1
        if d == "}" then
          return t
        elseif d ~= "," then
          fail("expected ',' or '}'")
        end
      end
    elseif c == "[" then
      local t, n = {}, 0
      pos = pos + 1
      skip()
      if string.sub(s, pos, pos) == "]" then
        pos = pos + 1
        return t
      end
      while true do
        n = n + 1
        t[n] = value()
        skip()
        local d = string.sub(s, pos, pos)
        pos = pos + 1
        if d == "]" then
          return t
        elseif d ~= "," then
          fail("expected ',' or ']'")
        end
      end
    elseif c == '"' then
      return str()
    elseif string.sub(s, pos, pos + 3) == "true" then
      pos = pos + 4
      return true
    elseif string.sub(s, pos, pos + 4) == "false" then
      pos = pos + 5
      return false
    elseif string.sub(s, pos, pos + 3) == "null" then
      pos = pos + 4
      return nil
    end
    return num()
  end

  decode = function(text)
    s, pos = text, 1
    local v = value()
    skip()
    if pos <= #s then
      fail("trailing data")
    end
    return v
  end
end

---------------------------------------------------------------------------------------
-- Argo CD's way: a fresh state per evaluation, the base library with string, table and
-- math, a global `obj`; the chunk's return value is the health.

local function run_health(path, obj)
  local env = {
    obj = obj,
    assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
    pcall = pcall, select = select, tonumber = tonumber, tostring = tostring,
    type = type, unpack = unpack or table.unpack,
    string = string, table = table, math = math,
  }
  local src = read(path)
  local chunk, err
  if setfenv then -- Lua 5.1
    chunk, err = loadstring(src, "@" .. path)
    if chunk then
      setfenv(chunk, env)
    end
  else
    chunk, err = load(src, "@" .. path, "t", env)
  end
  if not chunk then
    return nil, err
  end
  local ok, hs = pcall(chunk)
  if not ok then
    return nil, hs
  end
  return hs
end

local STATUSES = { Healthy = true, Progressing = true, Degraded = true, Suspended = true,
  Missing = true, Unknown = true }

local passed, failed = 0, 0
local function result(ok, line)
  if ok then
    passed = passed + 1
    print("ok   " .. line)
  else
    failed = failed + 1
    print("FAIL " .. line)
  end
end

local manifest = decode(read(root .. "/test/expected.json"))
for _, case in ipairs(manifest.cases) do
  local name = case.fixture
  local okread, obj = pcall(function()
    return decode(read(root .. "/test/fixtures/" .. name))
  end)
  if not okread then
    result(false, name .. ": " .. tostring(obj))
  else
    local script = root .. "/argocd/health/" .. string.match(obj.apiVersion, "^[^/]+")
      .. "/" .. obj.kind .. "/health.lua"
    local hs, err = run_health(script, obj)
    local want = case.argocd
    if type(hs) ~= "table" then
      result(false, name .. ": the script returned no table: " .. tostring(err))
    elseif not STATUSES[hs.status] or type(hs.message) ~= "string" then
      result(false, name .. ": not a health: status " .. tostring(hs.status)
        .. ", message " .. tostring(hs.message))
    else
      local problems = {}
      if hs.status ~= want.status then
        problems[#problems + 1] = "status " .. hs.status .. ", want " .. want.status
      end
      if want.message ~= nil and hs.message ~= want.message then
        problems[#problems + 1] = "message\n       got:  " .. hs.message
          .. "\n       want: " .. want.message
      end
      if want.messageContains ~= nil
          and not string.find(hs.message, want.messageContains, 1, true) then
        problems[#problems + 1] = "message\n       got:  " .. hs.message
          .. "\n       want it to contain: " .. want.messageContains
      end
      if #problems == 0 then
        result(true, name .. ": " .. hs.status .. " (" .. hs.message .. ")")
      else
        result(false, name .. ": " .. table.concat(problems, "; "))
      end
    end
  end
end

print(string.format("RESULT %s passed=%d failed=%d", _VERSION, passed, failed))
