-- >>> common (src/common.lua, shared by the four mcpgov.io kinds; render-cm.sh copies it)
-- Argo CD runs this with gopher-lua (Lua 5.1): no goto, no integer division, no io/os.
local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function is(c, value)
  return c ~= nil and c.status == value
end

-- "Reason: message", or whichever of the two is set.
local function say(c)
  if c == nil then
    return ""
  end
  local reason, message = c.reason or "", c.message or ""
  if reason ~= "" and message ~= "" then
    return reason .. ": " .. message
  end
  return reason .. message
end

local function health(status, message)
  return { status = status, message = message }
end

-- What every kind shares, in kstatus' order: status written, generation observed,
-- Stalled, Reconciling. Returns nil when the kind-specific part decides.
local function common()
  local status = obj.status
  if status == nil or status.conditions == nil or #status.conditions == 0
      or status.observedGeneration == nil then
    return health("Progressing", "waiting for the mcpgov operator to write status")
  end
  local generation = obj.metadata.generation
  if generation ~= nil and status.observedGeneration ~= generation then
    return health("Progressing", "waiting for the mcpgov operator to observe generation "
      .. tostring(generation) .. " (status is of generation "
      .. tostring(status.observedGeneration) .. ")")
  end
  local stalled = condition("Stalled")
  if is(stalled, "True") then
    return health("Degraded", say(stalled))
  end
  local reconciling = condition("Reconciling")
  if is(reconciling, "True") then
    return health("Progressing", say(reconciling))
  end
  return nil
end

-- Ready=True, or Progressing with Ready's reason (kstatus: InProgress).
local function ready()
  local r = condition("Ready")
  if is(r, "True") then
    return r, nil
  end
  if r == nil then
    return nil, health("Progressing", "waiting for the Ready condition")
  end
  return nil, health("Progressing", say(r))
end
-- <<< common
