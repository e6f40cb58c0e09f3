-- An orphan Policy (no agent reaches it) is Healthy; Active=False, which the operator
-- sets only with Stalled=True (a binding it cannot compile), is Degraded.
local function policy()
  local decided = common()
  if decided ~= nil then
    return decided
  end
  local r, waiting = ready()
  if r == nil then
    return waiting
  end
  local active = condition("Active")
  if is(active, "False") then
    return health("Degraded", say(active))
  end
  local message = r.message or ""
  if active ~= nil then
    message = message .. "; " .. say(active)
  end
  return health("Healthy", message)
end

local hs = policy()
return hs
