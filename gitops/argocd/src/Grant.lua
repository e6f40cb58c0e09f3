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
