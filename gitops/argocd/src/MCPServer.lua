-- Crawled=False (written by the crawler) is Degraded with the crawl's message, whether
-- or not a stale catalog is kept: an unreachable server is worth surfacing. A failed
-- crawl of an older generation (the spec changed since) is Progressing: the crawl of
-- the new spec is pending. Ready=False NotCrawled (no catalog yet, no crawl finished)
-- is Progressing.
local function server()
  local decided = common()
  if decided ~= nil then
    return decided
  end
  local generation = obj.metadata.generation
  local crawled = condition("Crawled")
  if is(crawled, "False") then
    local of = crawled.observedGeneration
    if of ~= nil and generation ~= nil and of < generation then
      return health("Progressing", "waiting for a crawl of generation " .. tostring(generation)
        .. " (the crawl of generation " .. tostring(of) .. " failed: " .. say(crawled) .. ")")
    end
    return health("Degraded", "crawl failed: " .. say(crawled))
  end
  local r, waiting = ready()
  if r == nil then
    return waiting
  end
  local message = r.message or ""
  if is(crawled, "True") then
    message = message .. "; " .. (crawled.message or "")
  end
  local drift = obj.status.drift
  if drift ~= nil and #drift > 0 then
    message = message .. "; dataAccess names tools the server does not expose (status.drift)"
  end
  return health("Healthy", message)
end

local hs = server()
return hs
