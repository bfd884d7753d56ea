/**
 * The Lua scripts of the Redis adapter (Lua 5.1, no module; Redis ≥ 7.0 or Valkey 8). Each is
 * one atomic step. ioredis sends them by SHA and resends the text after a Redis restart.
 *
 * A collection `c` lives in keys sharing the hash tag `{c}` (one Cluster slot per collection):
 *   P{c}:data         hash  id → record JSON
 *   P{c}:ids          zset  every id (score 0: lexicographic order), for scans and id-ordered queries
 *   P{c}:ix:<field>   zset  index keys (src/state/index-key.ts: value, "\0\0", id), score 0
 *   P{c}:iv:<field>   hash  id → its current index key (to remove it on change)
 * On a Cluster each collection is split into 16 shards by a hash of the id (./shards.ts): the
 * same keys under `{c:<n>}`, so a script touches the record's shard only.
 */
import { Cluster, type Redis } from 'ioredis';
import { ONCE_TTL_MS } from '../counters.js';

/**
 * KEYS: data, ids, then (zset, hash) per index, then (a `counters` collection) the record's
 * counter hash: the current version is then its JSON, "\0" and the hash's fields and values
 * "\0"-joined (what `expected` compares and a failed expectation returns), and a write or
 * delete removes the hash (the JSON written carries the counts).
 * ARGV: mode, id, json, expected, cap position,
 * cap low, cap high, cap max, then the new index key per index.
 * mode: put | del | cas | casdel | capped. expected: '' (none), '-' (absent), '=' .. json.
 * Returns {1, deleted?} when written; {0, current} when the expectation failed; {2, n} when
 * the cap was reached (n records in the cap's range).
 */
const WRITE = `
local mode = ARGV[1]
local id = ARGV[2]
local nk = #KEYS - 2
local cnt = nil
if nk % 2 == 1 then
  cnt = KEYS[#KEYS]
  nk = nk - 1
end
local cur = redis.call('HGET', KEYS[1], id)
if cnt and cur then
  local h = redis.call('HGETALL', cnt)
  if #h > 0 then cur = cur .. '\\0' .. table.concat(h, '\\0') end
end
local exp = ARGV[4]
if exp == '-' then
  if cur then return {0, cur} end
elseif exp ~= '' then
  if cur ~= string.sub(exp, 2) then return {0, cur} end
end
local nidx = nk / 2
if mode == 'capped' then
  local pos = tonumber(ARGV[5])
  local n = redis.call('ZLEXCOUNT', KEYS[1 + 2 * pos], ARGV[6], ARGV[7])
  if n >= tonumber(ARGV[8]) then return {2, n} end
end
-- The record's JSON now carries every count: its counter hash goes.
if cnt then redis.call('DEL', cnt) end
if mode == 'del' or mode == 'casdel' then
  if not cur then return {1, 0} end
  for i = 1, nidx do
    local old = redis.call('HGET', KEYS[2 + 2 * i], id)
    if old then
      redis.call('ZREM', KEYS[1 + 2 * i], old)
      redis.call('HDEL', KEYS[2 + 2 * i], id)
    end
  end
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  return {1, 1}
end
for i = 1, nidx do
  local newk = ARGV[8 + i]
  local old = redis.call('HGET', KEYS[2 + 2 * i], id)
  if old ~= newk then
    if old then redis.call('ZREM', KEYS[1 + 2 * i], old) end
    redis.call('ZADD', KEYS[1 + 2 * i], 0, newk)
    redis.call('HSET', KEYS[2 + 2 * i], id, newk)
  end
end
redis.call('HSET', KEYS[1], id, ARGV[3])
if not cur then redis.call('ZADD', KEYS[2], 0, id) end
return {1, 0}
`;

/**
 * KEYS: a zset (ids or an index), data. ARGV: min, max (ZRANGEBYLEX syntax), rev '1'|'0',
 * limit, '1' when the zset holds index keys (the id follows the first "\\0\\0"), and for a
 * `counters` collection the prefix of its counter hashes (same hash tag: same slot).
 * Returns {member1, json1, member2, json2, …} in one consistent snapshot (a record with
 * counters as WRITE reads it: JSON "\0" fields and values).
 */
const RANGE = `
local r
if ARGV[3] == '1' then
  r = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[2], ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))
else
  r = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
end
if #r == 0 then return {} end
local ids = r
if ARGV[5] == '1' then
  ids = {}
  for i = 1, #r do
    local k = r[i]
    local p = string.find(k, '\\0\\0', 1, true)
    ids[i] = string.sub(k, p + 2)
  end
end
local js = redis.call('HMGET', KEYS[2], unpack(ids))
local out = {}
local cp = ARGV[6]
for i = 1, #r do
  out[2 * i - 1] = r[i]
  local j = js[i]
  if j and cp and cp ~= '' then
    local h = redis.call('HGETALL', cp .. ids[i])
    if #h > 0 then j = j .. '\\0' .. table.concat(h, '\\0') end
  end
  out[2 * i] = j
end
return out
`;

/**
 * Collection.add on a `counters` collection. KEYS: data, ids, (zset, hash) per index, the
 * record's counter hash. ARGV: id, init JSON, the init's index key per index, the number of
 * caps, (prefix, max, overflow) per cap, the number of maxima, (field, value) per maximum, then
 * (field, delta) pairs. Creates the record from init when absent (dropping a stale counter
 * hash), keeps each maximum's larger value, then HINCRBYs each field; a field new to the hash
 * under a cap's prefix goes to the cap's overflow once the hash holds max such fields.
 */
/**
 * The counting shared by ADD and ADDN: for one record's counter hash `cnt` (`fresh`: created by
 * this call, so empty), keeps each maximum's larger value, then HINCRBYs each (field, delta)
 * pair; a field new to the hash under a cap's prefix goes to the cap's overflow once the hash
 * holds max such fields. From a[p]: the number of maxima, (field, value) per maximum, then
 * (field, delta) pairs up to a[last]. `caps`: (prefix, max, overflow) per cap.
 */
const COUNT = `
local function count(cnt, fresh, caps, a, p, last)
  local held = {}
  for i = 1, #caps do held[i] = fresh and 0 or -1 end
  -- A fresh record's hash is empty: its fields are summed here and set by one HSET at the end
  -- (one command instead of a HINCRBY per field: most of a first visit's cost on redis-server).
  local acc = fresh and {} or nil
  -- Maxima: kept under "\\1" .. field (store.ts decodeRecord), the larger value wins.
  local nmax = tonumber(a[p])
  p = p + 1
  for i = 1, nmax do
    local f = '\\1' .. a[p]
    if acc then
      acc[f] = a[p + 1]
    else
      local cur = tonumber(redis.call('HGET', cnt, f))
      if not cur or tonumber(a[p + 1]) > cur then redis.call('HSET', cnt, f, a[p + 1]) end
    end
    p = p + 2
  end
  -- No cap can be reached when the hash's fields and the new ones together stay within the
  -- smallest cap (HLEN counts every field: at least those a cap counts). Then no field is
  -- checked: most link-days hold a few fields (issue 32: the checks were a third of ADDN's
  -- cost on redis-server).
  if #caps > 0 and (last - p + 1) / 2 + (fresh and 0 or redis.call('HLEN', cnt)) <= caps.min then caps = {} end
  if fresh and #caps == 0 then
    -- Distinct fields, none redirected to an overflow: one HSET of the deltas as they came (a
    -- is ARGV or split's table, left as it is) and the maxima.
    if next(acc) == nil then
      if last >= p then redis.call('HSET', cnt, unpack(a, p, last)) end
    else
      local set = {unpack(a, p, last)}
      for f, v in pairs(acc) do
        set[#set + 1] = f
        set[#set + 1] = v
      end
      redis.call('HSET', cnt, unpack(set))
    end
    return
  end
  while p < last do
    local f = a[p]
    local n = a[p + 1]
    p = p + 2
    -- Fresh: the deltas' fields are distinct and none is a maximum's, so none exists yet.
    if #caps > 0 and (fresh or redis.call('HEXISTS', cnt, f) == 0) then
      for i = 1, #caps do
        local c = caps[i]
        local pre = c[1]
        if f ~= c[3] and string.find(f, pre, 1, true) == 1 then
          if held[i] < 0 then
            local k = 0
            for _, g in ipairs(redis.call('HKEYS', cnt)) do
              if g ~= c[3] and string.sub(g, 1, #pre) == pre then k = k + 1 end
            end
            held[i] = k
          end
          if held[i] >= c[2] then f = c[3] else held[i] = held[i] + 1 end
          break
        end
      end
    end
    if acc then
      local cur = acc[f]
      acc[f] = cur and string.format('%d', tonumber(cur) + tonumber(n)) or n
    else
      redis.call('HINCRBY', cnt, f, n)
    end
  end
  if acc then
    local set, k = {}, 0
    for f, v in pairs(acc) do
      set[k + 1] = f
      set[k + 2] = v
      k = k + 2
    end
    if k > 0 then redis.call('HSET', cnt, unpack(set)) end
  end
end
-- The parts of a "\\0"-joined string (ADDN's counts of one record) and their number.
local function split(s)
  local t, i, n = {}, 1, 0
  while true do
    local j = string.find(s, '\\0', i, true)
    n = n + 1
    if not j then
      t[n] = string.sub(s, i)
      return t, n
    end
    t[n] = string.sub(s, i, j - 1)
    i = j + 1
  end
end
-- The caps from ARGV[p]: their number, then (prefix, max, overflow) per cap (caps.min: the
-- smallest max); returns them and the next position.
local function capsAt(p)
  local caps = {min = math.huge}
  for i = 1, tonumber(ARGV[p]) do
    caps[i] = {ARGV[p + 3 * i - 2], tonumber(ARGV[p + 3 * i - 1]), ARGV[p + 3 * i]}
    if caps[i][2] < caps.min then caps.min = caps[i][2] end
  end
  return caps, p + 1 + 3 * #caps
end
`;

/**
 * Collection.add on a `counters` collection. KEYS: data, ids, (zset, hash) per index, the
 * record's counter hash. ARGV: id, init JSON, the init's index key per index, the number of
 * caps, (prefix, max, overflow) per cap, the number of maxima, (field, value) per maximum, then
 * (field, delta) pairs. Creates the record from init when absent (dropping a stale counter
 * hash), then counts (COUNT).
 */
const ADD = `${COUNT}
local id = ARGV[1]
local nidx = (#KEYS - 3) / 2
local cnt = KEYS[#KEYS]
-- A record created here starts with an empty counter hash: its caps count from 0 and no field
-- exists yet (no HEXISTS, no HKEYS: most of a first add's cost on redis-server).
local fresh = false
if redis.call('HEXISTS', KEYS[1], id) == 0 then
  fresh = true
  redis.call('HSET', KEYS[1], id, ARGV[2])
  redis.call('ZADD', KEYS[2], 0, id)
  for i = 1, nidx do
    local k = ARGV[2 + i]
    local old = redis.call('HGET', KEYS[2 + 2 * i], id)
    if old then redis.call('ZREM', KEYS[1 + 2 * i], old) end
    redis.call('ZADD', KEYS[1 + 2 * i], 0, k)
    redis.call('HSET', KEYS[2 + 2 * i], id, k)
  end
  redis.call('DEL', cnt)
end
local caps, p = capsAt(3 + nidx)
count(cnt, fresh, caps, ARGV, p, #ARGV)
return 1
`;

/**
 * Collection.addMany on a `counters` collection without indexes: ADD for many records of one
 * shard in one call. KEYS: data, ids, the prefix of the counter hashes (same hash tag, as
 * RANGE's ARGV[6]), and with `once` the batch's token key (the script runs once per token
 * within ONCE_TTL_MS: answers -1, writing nothing, when it ran before). Counts are
 * "\0"-joined (field names hold no control character): the number of maxima, (field, value)
 * per maximum, then (field, delta) per delta. ARGV:
 * - the caps (as in ADD);
 * - the id field's name, the number S of shared deltas, S deltas "\0"-joined ((field, delta)
 *   each), then the plain records in one argument: per record "id\1counts\1\2" (its counts as
 *   above; the first record of a deltas object) or "id\1maxima\1s\2" (its maxima as above,
 *   its deltas the s-th shared ones), whose init is only the id ({"<field>":"<id>"}: neither
 *   holds a character JSON escapes);
 * - per other record: id, init JSON, its counts.
 * Records visited alike share their deltas, sent and split once; the plain ones cost the
 * client one argument for them all: its encoding costs ≈ 0.25 µs of Node CPU per argument
 * (ioredis), the parsing here less than the arguments it saves (issue 32).
 */
const ADDN = `${COUNT}
-- A batch sent again under a token it already ran with (its first call timed out, then ran): not twice.
if #KEYS > 3 and not redis.call('SET', KEYS[4], '1', 'NX', 'PX', ${ONCE_TTL_MS}) then return -1 end
local caps, p = capsAt(1)
local key = ARGV[p]
local ns = tonumber(ARGV[p + 1])
local shared = {}
for i = 1, ns do
  local d = ARGV[p + 1 + i]
  shared[i] = d == '' and {} or split(d)
end
local plain = ARGV[p + 2 + ns]
p = p + 3 + ns
local r = 0
local function add(id, init, a, n)
  r = r + 1
  local cnt = KEYS[3] .. id
  local fresh = redis.call('HSETNX', KEYS[1], id, init) == 1
  if fresh then
    redis.call('ZADD', KEYS[2], 0, id)
    redis.call('DEL', cnt)
  end
  count(cnt, fresh, caps, a, 1, n)
end
local i = 1
while i <= #plain do
  local j = string.find(plain, '\\1', i, true)
  local k = string.find(plain, '\\1', j + 1, true)
  local e = string.find(plain, '\\2', k + 1, true)
  local id = string.sub(plain, i, j - 1)
  local a, n = split(string.sub(plain, j + 1, k - 1))
  if e > k + 1 then
    local d = shared[tonumber(string.sub(plain, k + 1, e - 1))]
    for x = 1, #d do a[n + x] = d[x] end
    n = n + #d
  end
  add(id, '{"' .. key .. '":"' .. id .. '"}', a, n)
  i = e + 1
end
while p <= #ARGV do
  local a, n = split(ARGV[p + 2])
  add(ARGV[p], ARGV[p + 1], a, n)
  p = p + 3
end
return r
`;

/** KEYS: data, the record's counter hash. ARGV: id. The record as WRITE reads it (nil: absent). */
const GETC = `
local j = redis.call('HGET', KEYS[1], ARGV[1])
if not j then return nil end
local h = redis.call('HGETALL', KEYS[2])
if #h > 0 then j = j .. '\\0' .. table.concat(h, '\\0') end
return j
`;

/**
 * The two limit windows of one subject (docs/contract.md §5), checked and consumed in one step,
 * on Redis's clock, for up to ARGV[3] calls at once (0: only look). The calls are taken in
 * order, as if they had come one after another with nothing in between: the first `a` fit (both
 * windows have room), the rest are refused and cost nothing.
 * KEYS: the minute log, the day hash (day, n), and the minute log of the script before
 * (session 9: one member per call; read only when the new log is empty, during an upgrade).
 * ARGV: per_minute, per_day, calls.
 * The minute log holds ONE member per script run that admitted calls (session 10):
 * "<ms>:<cum>:<count>", score ms, where cum (15 digits, so that members of one millisecond sort
 * by it) numbers the log's calls: the run's calls are cum - count + 1 … cum. The calls in the
 * log are then the newest cum minus the one before the oldest call (two O(log N) reads, no
 * count kept beside it that could drift), and a position in the log is found by a binary search
 * over the members' cum. The calls of one run share one time, so every answer is the one the
 * per-call log gave.
 * Returns {a, now_ms, minute_used_before, day_used_before, first_time, oldest_counted_time}:
 * first_time is the oldest call in the log once the `a` are in (what an admitted call's reset
 * is computed from); oldest_counted_time the call that must leave before one more fits (a
 * refused call's reset): the call at position n + a - per_minute (0: the oldest).
 * Keyed calls from a cached key record (issue 37) add KEYS[4], the key's generation
 * (P{rl:<subject>}:gen, the windows' slot), and ARGV[4], the generation the record was cached
 * under: when they differ the record changed since, and the script consumes nothing and returns
 * {-1, generation}.
 */
const RATE = `
if ARGV[4] then
  local g = redis.call('GET', KEYS[4]) or '0'
  if g ~= ARGV[4] then return {-1, g} end
end
local log = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Never before the newest run in the log: a primary whose clock is behind the one before it
-- (a failover, an NTP step back) would otherwise add runs scored below it, and n = last - base
-- (last read from the highest score) would count nothing until its clock caught up.
local tail = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
if tail[2] and tonumber(tail[2]) > now then now = tonumber(tail[2]) end
local day = math.floor(now / 86400000)
local perMin = tonumber(ARGV[1])
local perDay = tonumber(ARGV[2])
local k = tonumber(ARGV[3])
local cut = now - 60000
local function parse(member)
  local c, w = string.match(member, '^%d+:(%d+):(%d+)')
  return tonumber(c), tonumber(w)
end
local head = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
if head[1] and tonumber(head[2]) <= cut then
  redis.call('ZREMRANGEBYSCORE', log, '-inf', cut)
  head = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
end
-- base: the cum before the oldest call; last: the newest call's.
local base = 0
local last = 0
if head[1] then
  local hc, hw = parse(head[1])
  base = hc - hw
  last = parse(tail[1])
else
  -- Empty (or expired after 61 s idle). The old script's log, if any, comes in as weighted
  -- members: exact (one per millisecond) up to 1024 calls, else in at most 256 runs of calls,
  -- each at its newest call's time (a call is never forgotten early; a reset is at most one
  -- run late). The old log stays: old instances of a rolling upgrade still use it.
  local old = KEYS[3]
  local after = string.format('(%d', cut)
  local c = redis.call('ZCOUNT', old, after, '+inf')
  if c > 0 then
    local z = {}
    if c <= 1024 then
      local r = redis.call('ZRANGEBYSCORE', old, after, '+inf', 'WITHSCORES')
      local i = 1
      while i <= #r do
        local s = r[i + 1]
        local j = i
        while j + 2 <= #r and r[j + 3] == s do j = j + 2 end
        z[#z + 1] = s
        z[#z + 1] = string.format('%s:%015d:%d', s, (j + 1) / 2, (j - i) / 2 + 1)
        i = j + 2
      end
    else
      local off = redis.call('ZCARD', old) - c
      local size = math.ceil(c / 256)
      for b = 0, c - 1, size do
        local w = math.min(size, c - b)
        local s = redis.call('ZRANGE', old, off + b + w - 1, off + b + w - 1, 'WITHSCORES')[2]
        z[#z + 1] = s
        z[#z + 1] = string.format('%s:%015d:%d', s, b + w, w)
      end
    end
    redis.call('ZADD', log, unpack(z))
    redis.call('PEXPIRE', log, 61000)
    last = c
    head = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  end
end
local n = last - base
local d = redis.call('HMGET', KEYS[2], 'day', 'n')
local sameDay = tonumber(d[1]) == day
local used = 0
if sameDay then used = tonumber(d[2]) or 0 end
local a = math.min(k, perMin - n, perDay - used)
if a < 0 then a = 0 end
local nowS = string.format('%d', now)
if a > 0 then
  redis.call('ZADD', log, now, string.format('%d:%015d:%d', now, last + a, a))
  redis.call('PEXPIRE', log, 61000)
  if sameDay then
    redis.call('HINCRBY', KEYS[2], 'n', a)
  else
    redis.call('HSET', KEYS[2], 'day', day, 'n', a)
  end
  redis.call('PEXPIRE', KEYS[2], (day + 1) * 86400000 - now + 3600000)
end
local first = head[2] or nowS
local idx = n + a - perMin
if idx <= 0 then
  return {a, nowS, n, used, first, first}
end
-- The call at position idx is the one numbered base + idx + 1: the first member (by rank:
-- time, then cum) whose cum reaches it. O(log² N), whatever the limit.
local want = base + idx + 1
local lo = 0
local hi = redis.call('ZCARD', log) - 1
while lo < hi do
  local mid = math.floor((lo + hi) / 2)
  if parse(redis.call('ZRANGE', log, mid, mid)[1]) >= want then hi = mid else lo = mid + 1 end
end
local at = redis.call('ZRANGE', log, lo, lo, 'WITHSCORES')
return {a, nowS, n, used, first, at[2] or nowS}
`;

/**
 * One sliding window (registration: 5 per address per hour). KEYS: the log (zset).
 * ARGV: limit, window ms. Returns {allowed, now_ms, used, oldest_counted_time, first_time}.
 */
const SLIDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - win)
local n = redis.call('ZCARD', KEYS[1])
local allowed = n < limit
if allowed then
  redis.call('ZADD', KEYS[1], now, string.format('%d:%s', now, ARGV[3]))
  redis.call('PEXPIRE', KEYS[1], win + 1000)
  n = n + 1
end
local idx = n - limit
if idx < 0 then idx = 0 end
local oc = redis.call('ZRANGE', KEYS[1], idx, idx, 'WITHSCORES')
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {allowed and 1 or 0, string.format('%d', now), n, oc[2] or string.format('%d', now), first[2] or string.format('%d', now)}
`;

/** KEYS: a lock. ARGV: the holder's token. Frees the lock only if this holder still has it. */
const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * The index check (`devtoolbox check-indexes`, RedisStore.checkIndexes): confirms, and with
 * repair '1' fixes, entries of one index that an older version's writes left wrong. KEYS: data,
 * the index's zset, its hash. ARGV: repair, the counter hashes' prefix ('' when none), then
 * groups of (entry, id, text, new entry): `entry` the zset member found ('' for a record found
 * without one), `text` the record's version read ('' when it was gone), `new entry` the key
 * its value gives ('' when gone). A group holds when the record is still as read and the entry
 * still as found; then a repair removes `entry` and sets `new entry`. Returns per group
 * (status, current text): 1 held (fixed when repairing), 0 the record changed since it was
 * read (current text, or false when gone), 2 nothing to do any more.
 */
const IXFIX = `
local repair = ARGV[1] == '1'
local cp = ARGV[2]
local out = {}
for g = 3, #ARGV, 4 do
  local entry, id, text, newk = ARGV[g], ARGV[g + 1], ARGV[g + 2], ARGV[g + 3]
  local cur = redis.call('HGET', KEYS[1], id)
  if cur and cp ~= '' then
    local h = redis.call('HGETALL', cp .. id)
    if #h > 0 then cur = cur .. '\\0' .. table.concat(h, '\\0') end
  end
  local iv = redis.call('HGET', KEYS[3], id)
  local st = 1
  if (text == '' and cur) or (text ~= '' and cur ~= text) then
    st = 0
  elseif entry ~= '' and not redis.call('ZSCORE', KEYS[2], entry) then
    st = 2
  elseif entry == '' and iv then
    st = 2
  end
  if st == 1 and repair then
    if entry ~= '' then
      redis.call('ZREM', KEYS[2], entry)
      if iv == entry then
        redis.call('HDEL', KEYS[3], id)
        iv = false
      end
    end
    if newk ~= '' then
      if iv and iv ~= newk then redis.call('ZREM', KEYS[2], iv) end
      redis.call('ZADD', KEYS[2], 0, newk)
      redis.call('HSET', KEYS[3], id, newk)
    end
  end
  out[#out + 1] = st
  out[#out + 1] = st == 0 and (cur or false) or false
end
return out
`;

type Reply = Promise<unknown>;

const SCRIPT_NAMES = ['dtbWrite', 'dtbRange', 'dtbRate', 'dtbSlide', 'dtbUnlock', 'dtbAdd', 'dtbAddN', 'dtbGetC', 'dtbIxFix'];

export interface ScriptedRedis extends Redis {
  dtbWrite(numKeys: number, ...args: string[]): Reply;
  dtbRange(numKeys: number, ...args: string[]): Reply;
  dtbRate(numKeys: number, ...args: string[]): Reply;
  dtbSlide(numKeys: number, ...args: string[]): Reply;
  dtbUnlock(numKeys: number, ...args: string[]): Reply;
  dtbAdd(numKeys: number, ...args: string[]): Reply;
  /** KEYS and ARGV in lists (ioredis flattens them): no spread of a batch's arguments. */
  dtbAddN(numKeys: number, ...parts: string[][]): Reply;
  dtbGetC(numKeys: number, ...args: string[]): Reply;
  dtbIxFix(numKeys: number, ...args: string[]): Reply;
}

/**
 * Defines the scripts on a connection (idempotent). A Cluster is typed as Redis here: the
 * store uses only the commands both clients share (every call's keys in one slot).
 */
export function defineScripts(redis: Redis | Cluster): ScriptedRedis {
  const r = redis as ScriptedRedis;
  if (typeof r.dtbWrite !== 'function') {
    // A Cluster's auto-pipelining routes a script call by its first argument, which for these
    // scripts is the key count, not a key: it would batch calls for other nodes together and
    // the batch fails. Sent one by one, each goes to its first key's slot.
    // The limit script is batched per turn by its caller (./windows.ts), which writes it at once:
    // ioredis' own batching would add a turn, a Pipeline object and a nextTick per reply (issue 37).
    const ignored = redis instanceof Cluster ? SCRIPT_NAMES : ['dtbRate'];
    redis.options.autoPipeliningIgnoredCommands = [...(redis.options.autoPipeliningIgnoredCommands ?? []), ...ignored];
    redis.defineCommand('dtbWrite', { lua: WRITE });
    redis.defineCommand('dtbRange', { lua: RANGE });
    redis.defineCommand('dtbRate', { lua: RATE });
    redis.defineCommand('dtbSlide', { lua: SLIDE });
    redis.defineCommand('dtbUnlock', { lua: UNLOCK });
    redis.defineCommand('dtbAdd', { lua: ADD });
    redis.defineCommand('dtbAddN', { lua: ADDN });
    redis.defineCommand('dtbGetC', { lua: GETC });
    redis.defineCommand('dtbIxFix', { lua: IXFIX });
  }
  return r;
}
