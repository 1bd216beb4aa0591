-- fannkuch-redux (the Computer Language Benchmarks Game), a CPU-bound
-- workload: permutations, array reads and writes, no I/O.
local function fannkuch(n)
  local perm, perm1, count = {}, {}, {}
  local maxflips, checksum, permcount = 0, 0, 0
  for i = 0, n - 1 do perm1[i] = i end
  local r = n
  while true do
    while r ~= 1 do count[r - 1] = r; r = r - 1 end
    for i = 0, n - 1 do perm[i] = perm1[i] end
    local flips = 0
    local k = perm[0]
    while k ~= 0 do
      local i, j = 0, k
      while i < j do perm[i], perm[j] = perm[j], perm[i]; i = i + 1; j = j - 1 end
      flips = flips + 1
      k = perm[0]
    end
    if flips > maxflips then maxflips = flips end
    checksum = checksum + (permcount % 2 == 0 and flips or -flips)
    while true do
      if r == n then return checksum, maxflips end
      local p0 = perm1[0]
      for i = 0, r - 1 do perm1[i] = perm1[i + 1] end
      perm1[r] = p0
      count[r] = count[r] - 1
      if count[r] > 0 then break end
      r = r + 1
    end
    permcount = permcount + 1
  end
end
-- usage: lua5.4 fannkuch.lua N [REPEAT]: REPEAT runs of fannkuch(N), so
-- that the bench can size the work between the steps of N (each is ~10x).
local n = tonumber(arg and arg[1]) or 7
local repeat_count = tonumber(arg and arg[2]) or 1
for _ = 1, repeat_count do
  local sum, flips = fannkuch(n)
  print(sum .. "\nPfannkuchen(" .. n .. ") = " .. flips)
end
