-- A violation (Compliant=False) is a governance finding, not a health problem: the
-- Agent stays Healthy and the message carries the count. A bundle that could not be
-- published (too large, write failed) leaves runtimes without current rules: Degraded.
local function agent()
  local decided = common()
  if decided ~= nil then
    return decided
  end
  local r, waiting = ready()
  if r == nil then
    return waiting
  end
  local bundle = condition("BundlePublished")
  if is(bundle, "False") and bundle.reason ~= "Disabled" then
    return health("Degraded", "bundle not published: " .. say(bundle))
  end
  local message = r.message or ""
  local compliant = condition("Compliant")
  if is(compliant, "False") then
    message = message .. "; " .. say(compliant)
  elseif is(compliant, "True") then
    message = message .. "; " .. (compliant.message or "")
  end
  if is(bundle, "False") then
    message = message .. "; bundle " .. say(bundle)
  end
  return health("Healthy", message)
end

local hs = agent()
return hs
