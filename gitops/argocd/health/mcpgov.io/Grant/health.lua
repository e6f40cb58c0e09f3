-- Argo CD health check for mcpgov.io/Grant (resource customization: the script runs
-- with a global `obj`, the live object, and returns hs = {status, message}).
-- Installed through gitops/argocd/argocd-cm-patch.yaml (render-cm.sh); decisions and
-- their reasons: docs/gitops.md. Tests: gitops/test.sh (captured status fixtures).

-- >>> common (identical in the four mcpgov.io health.lua files; gitops/test.sh checks)
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

-- An unresolved reference (Resolved=False: NotFound, CrossNamespaceDenied, Drifted, ...)
-- is a governance outcome the operator reports, not a health problem: Healthy, with
-- the first problem in the message. Only Stalled (InvalidSpec) is Degraded.
local function grant()
  local decided = common()
  if decided ~= nil then
    return decided
  end
  local r, waiting = ready()
  if r == nil then
    return waiting
  end
  local message = r.message or ""
  local resolved = condition("Resolved")
  if is(resolved, "False") then
    message = message .. "; " .. say(resolved)
  elseif is(resolved, "True") then
    message = message .. "; " .. (resolved.message or "")
  end
  return health("Healthy", message)
end

local hs = grant()
return hs
