/**
 * The Lua scripts of the `redis` queue backend (./redis.ts). Each operation is one script, so it
 * is atomic: no other engine sees a message half moved, and two engines never start one message.
 *
 * Every script takes no KEYS (the keys an operation touches, e.g. the fifo group of a message, are
 * only known inside it) and `ARGV[1]` = the key prefix `<key_prefix>queue:`, `ARGV[2]` = the
 * caller's owner id (one per open backend). A single Redis server (or a primary with replicas),
 * version 5 or later, is assumed, not Redis Cluster. Key layout, for prefix `P` (see ./redis.ts for the meaning):
 *
 * - `P m:<id>` hash per message: `q` queue, `t` target (`namespace NUL function_id`), `g` fifo
 *   group (absent for none), `k` concurrency key (absent for none), `n` seq, `s` state
 *   (`p` pending, `i` in flight, `d` dead), `a` attempts, `r` ready_at, `o` owner while in flight,
 *   `e` error JSON and `fa` failed_at while dead, `b` the immutable body as JSON;
 * - `P p:<q>` zset of ungrouped pending messages, score ready_at, member `<seq, 16 digits><id>`
 *   (so that ties keep enqueue order);
 * - `P g:<bytes of q>:<q><group>` zset of the live (pending or in-flight) messages of one fifo
 *   group, score seq: its first member is the head;
 * - `P gh:<q>` zset of the groups whose head is pending, score the head's ready_at;
 * - `P gp:<q>` zset of grouped pending messages, score ready_at (counts);
 * - `P k:<q>` set of concurrency keys with an attempt in flight;
 * - `P f:<q>` set of in-flight ids; `P x:<q>` zset DLQ, score failed_at;
 * - `P leases` zset of every in-flight id, score its lease deadline in Redis server time (ms);
 * - `P queues` hash queue → number of stored messages; `P seq` counter; `P subs` hash queue →
 *   subscriber record JSON; `P i:<bytes of q>:<q><key>` idempotency key → `<expires_at>|<id>`;
 * - channel `P wake`: `<owner>\n<queue>` when messages of a queue became startable.
 */

/** Helpers shared by every script. Numbers that reach Redis as Lua numbers stay below 1e14 (ms, seq). */
const PRELUDE = String.raw`
-- Lease times come from TIME: replicate effects, not the script (the default from Redis 5 on).
if redis.replicate_commands then redis.replicate_commands() end
local P = ARGV[1]
local OWNER = ARGV[2]
local function mkey(id) return P .. 'm:' .. id end
local function qkey(kind, q) return P .. kind .. ':' .. q end
local function gkey(q, g) return P .. 'g:' .. #q .. ':' .. q .. g end
local function member(seq, id) return string.format('%016d', tonumber(seq)) .. id end
local function redisNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function wake(q) redis.call('PUBLISH', P .. 'wake', OWNER .. '\n' .. q) end
local function countQueue(q, delta)
  local n = redis.call('HINCRBY', P .. 'queues', q, delta)
  if n <= 0 then redis.call('HDEL', P .. 'queues', q) end
end
-- The group's head decides whether the group may start: listed in gh while it is pending.
local function refreshGroup(q, g)
  local head = redis.call('ZRANGE', gkey(q, g), 0, 0)[1]
  if not head then
    redis.call('ZREM', qkey('gh', q), g)
    return
  end
  local f = redis.call('HMGET', mkey(head), 's', 'r')
  if f[1] == 'p' then redis.call('ZADD', qkey('gh', q), f[2], g) else redis.call('ZREM', qkey('gh', q), g) end
end
-- A pending message (hash already written) where reserve finds it.
local function place(id, q, g, seq, ready)
  if g then
    redis.call('ZADD', gkey(q, g), seq, id)
    redis.call('ZADD', qkey('gp', q), ready, id)
    refreshGroup(q, g)
  else
    redis.call('ZADD', qkey('p', q), ready, member(seq, id))
  end
end
-- f = HMGET s o q g k n. Out of the live indexes; the hash is left to the caller (its owner field
-- cleared). ACK does the same for the messages it deletes, batched (ACK_BODY).
local function unplace(id, f)
  local q, g, k = f[3], f[4], f[5]
  if f[1] == 'i' then
    redis.call('SREM', qkey('f', q), id)
    redis.call('ZREM', P .. 'leases', id)
    redis.call('HDEL', mkey(id), 'o')
    if (not g) and k then redis.call('SREM', qkey('k', q), k) end
  elseif not g then
    redis.call('ZREM', qkey('p', q), member(f[6], id))
  end
  if g then
    redis.call('ZREM', gkey(q, g), id)
    redis.call('ZREM', qkey('gp', q), id)
    refreshGroup(q, g)
  end
end
local function kill(id, f, err, at)
  unplace(id, f)
  redis.call('HSET', mkey(id), 's', 'd', 'e', err, 'fa', at)
  redis.call('ZADD', qkey('x', f[3]), at, id)
  if f[1] == 'i' and (f[4] or f[5]) then wake(f[3]) end
end
local FIELDS = {'s', 'o', 'q', 'g', 'k', 'n'}
-- One command for many members (SADD, ZREM, ZADD, DEL…) where a script would call it per message:
-- each redis.call costs Redis about as much as a small command from a client (and one AOF entry).
-- 'list' holds the members (for ZADD: score, member pairs), sent 'step' at a time (Lua's unpack
-- limit); 'key' false for DEL, whose arguments are all keys.
local function many(cmd, key, list, step)
  for at = 1, #list, step do
    local stop = math.min(at + step - 1, #list)
    if key then redis.call(cmd, key, unpack(list, at, stop)) else redis.call(cmd, unpack(list, at, stop)) end
  end
end
`

/**
 * ARGV 3…: 9 fields per message: id, queue, target, fifo group after a 'g' ('' none), concurrency
 * key after a 'k' ('' none), ready_at, idempotency `<expires_at>|<TTL ms>|<enqueued_at>|<key>` ('' none),
 * dead `<enqueued_at>|<error JSON>` ('' none: stored pending), body JSON. (The fields a message
 * rarely has are packed, so that a plain one costs the caller and Redis 9 arguments, not 14.)
 * Returns one element per message: `0` stored, `2` its id already taken, or the id (a string) of
 * the message it duplicates (idempotency key). A reply of integers, where it can be, costs the
 * caller no string per message.
 */
export const ENQUEUE = `${PRELUDE}
local out = {}
local woken = {}
local added = {}
-- Sequence numbers: read once, handed out in order, written back once.
local seqBase, seqUsed = nil, 0
-- Ungrouped pending messages per queue: score, member pairs for one ZADD each.
local pend = {}
-- Whether an id is already taken: one EXISTS over every message of the call (see 'many': a call per
-- message cost Redis as much as the HSET), and one per message only when that finds one, or when
-- the call names an id twice (the first stores it, the second is refused).
local keys, named = {}, {}
local checkEach = false
for x = 3, #ARGV, 9 do
  local id = ARGV[x]
  if named[id] then checkEach = true end
  named[id] = true
  keys[#keys + 1] = mkey(id)
end
for at = 1, #keys, 1000 do
  if checkEach then break end
  if redis.call('EXISTS', unpack(keys, at, math.min(at + 999, #keys))) > 0 then checkEach = true end
end
local i = 3
local nth = 0
while i <= #ARGV do
  local id, q, t, g, k, ready, idem, dead, body = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8]
  i = i + 9
  nth = nth + 1
  if g == '' then g = nil else g = string.sub(g, 2) end
  if k == '' then k = nil else k = string.sub(k, 2) end
  local enq
  if dead ~= '' then
    local sep = string.find(dead, '|', 1, true)
    enq, dead = string.sub(dead, 1, sep - 1), string.sub(dead, sep + 1)
  end
  local dup = false
  if idem ~= '' then
    local a = string.find(idem, '|', 1, true)
    local b = string.find(idem, '|', a + 1, true)
    local c = string.find(idem, '|', b + 1, true)
    local iexp, ittl = string.sub(idem, 1, a - 1), string.sub(idem, a + 1, b - 1)
    enq = string.sub(idem, b + 1, c - 1)
    local ikey = P .. 'i:' .. #q .. ':' .. q .. string.sub(idem, c + 1)
    local seen = redis.call('GET', ikey)
    if seen then
      local sep = string.find(seen, '|', 1, true)
      if sep and tonumber(string.sub(seen, 1, sep - 1)) > tonumber(enq) then
        out[#out + 1] = string.sub(seen, sep + 1)
        dup = true
      end
    end
    if not dup then redis.call('SET', ikey, iexp .. '|' .. id, 'PX', ittl) end
  end
  if not dup then
    local m = keys[nth]
    if checkEach and redis.call('EXISTS', m) == 1 then
      out[#out + 1] = 2
    else
    if not seqBase then seqBase = tonumber(redis.call('GET', P .. 'seq') or '0') end
    seqUsed = seqUsed + 1
    local seq = seqBase + seqUsed
    -- One HSET with every field (a plain message's without building a table first).
    if not g and not k and dead == '' then
      redis.call('HSET', m, 'q', q, 't', t, 'n', seq, 'r', ready, 'a', '0', 'b', body, 's', 'p')
    else
      local fields = {'q', q, 't', t, 'n', seq, 'r', ready, 'a', '0', 'b', body}
      if g then
        fields[#fields + 1] = 'g'
        fields[#fields + 1] = g
      end
      if k then
        fields[#fields + 1] = 'k'
        fields[#fields + 1] = k
      end
      if dead ~= '' then
        for _, v in ipairs({'s', 'd', 'e', dead, 'fa', enq}) do fields[#fields + 1] = v end
      else
        fields[#fields + 1] = 's'
        fields[#fields + 1] = 'p'
      end
      redis.call('HSET', m, unpack(fields))
    end
    added[q] = (added[q] or 0) + 1
    if dead ~= '' then
      redis.call('ZADD', qkey('x', q), enq, id)
    elseif g then
      place(id, q, g, seq, ready)
      woken[q] = true
    else
      local list = pend[q]
      if not list then
        list = {}
        pend[q] = list
      end
      list[#list + 1] = ready
      list[#list + 1] = member(seq, id)
      woken[q] = true
    end
    out[#out + 1] = 0
    end
  end
end
if seqUsed > 0 then redis.call('INCRBY', P .. 'seq', seqUsed) end
for q, list in pairs(pend) do many('ZADD', qkey('p', q), list, 512) end
for q, n in pairs(added) do countQueue(q, n) end
for q in pairs(woken) do wake(q) end
return out
`

const RESERVE_BODY = String.raw`
local q = ARGV[B]
local now = ARGV[B + 1]
local limit = tonumber(ARGV[B + 2])
local lease = tonumber(ARGV[B + 3])
local budget = tonumber(ARGV[B + 4])
local check = ARGV[B + 7] == '1'
local verdict = {}
local j = B + 8
local nA = tonumber(ARGV[j])
for x = 1, nA do verdict[ARGV[j + x]] = true end
j = j + nA + 1
local nR = tonumber(ARGV[j])
for x = 1, nR do verdict[ARGV[j + x]] = false end
local unknown, unknownSeen = {}, {}
local function may(t)
  if not check then return true end
  local v = verdict[t]
  if v == nil then
    if not unknownSeen[t] then
      unknownSeen[t] = true
      unknown[#unknown + 1] = t
    end
    return false
  end
  return v
end
local deadline = redisNow() + lease
local out = {}
local taken = 0
local more = 0
-- Index writes of the started messages, one command each per call (see 'many'): the in-flight set
-- and the leases at the end; the entries taken out of a pending zset before that zset is read again.
local startedIds, leaseList = {}, {}
local removals = {}
local function removeLater(key, entry)
  local list = removals[key]
  if not list then
    list = {}
    removals[key] = list
  end
  list[#list + 1] = entry
end
local function flushRemovals(key)
  local list = removals[key]
  if list and #list > 0 then
    many('ZREM', key, list, 1000)
    removals[key] = nil
  end
end
-- A message's target and key decide whether it starts; the rest (its body above all) is only
-- needed when it does. Until the first skip of a call every field is read at once (the entries at
-- the resume point usually start: one command instead of two); after it, target and key first.
local eager = true
local function look(m)
  if eager then
    local f = redis.call('HMGET', m, 't', 'k', 'n', 'r', 'b', 'a')
    return f[1], f[2], f
  end
  local f = redis.call('HMGET', m, 't', 'k')
  return f[1], f[2], nil
end
local function skip()
  eager = false
  return false
end
-- 'f' as look read it: {t, k, n, r, b, a}, or nil to read n, r, b, a now.
local function start(id, m, f)
  -- o: where n, r, b, a start in f (look's read holds t and k before them).
  local o = 2
  if not f then
    f = redis.call('HMGET', m, 'n', 'r', 'b', 'a')
    o = 0
  end
  local a = tonumber(f[o + 4]) + 1
  redis.call('HSET', m, 'a', a, 's', 'i', 'o', OWNER)
  startedIds[#startedIds + 1] = id
  leaseList[#leaseList + 1] = deadline
  leaseList[#leaseList + 1] = id
  -- seq and ready_at as integer replies (no string for the caller to make and parse), unless a
  -- ready_at has a fraction (an integer reply would cut it).
  local r = tonumber(f[o + 2])
  out[#out + 1] = id
  out[#out + 1] = a
  out[#out + 1] = tonumber(f[o + 1])
  out[#out + 1] = r == math.floor(r) and r or f[o + 2]
  out[#out + 1] = f[o + 3]
  taken = taken + 1
end
-- Visits the entries of zset 'key' ready at 'now' from position 'from' (where the last call of
-- this caller ran out of budget, ARGV 8 and 9) to the end, then from the start back to 'from', so
-- that work behind a long run of blocked entries is reached across calls. Looks at 'cap' entries
-- at most. 'visit' answers true when it took the entry out of the zset (skipped ones keep their
-- positions). Returns the position to resume at (0 unless the cap ran out) and how many it looked at.
local function scan(key, from, cap, visit)
  local offset, wrapped, seen = from, from == 0, 0
  local size = limit - taken
  while taken < limit do
    if seen >= cap then
      more = 1
      return offset, seen
    end
    if wrapped and from > 0 and offset >= from then return 0, seen end
    -- The first read asks for what is still wanted (each entry read is a string copied into Lua),
    -- the later ones, past skipped entries, for 64 at a time. Entries taken so far leave first.
    flushRemovals(key)
    local batch = redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', offset, size)
    size = 64
    if #batch == 0 then
      if wrapped then return 0, seen end
      wrapped = true
      offset = 0
    else
      for _, entry in ipairs(batch) do
        if taken >= limit or seen >= cap then break end
        seen = seen + 1
        if not visit(entry) then offset = offset + 1 end
      end
    end
  end
  return 0, seen
end
-- fifo groups: the head of each group whose head is pending and ready.
local gh = qkey('gh', q)
-- Groups look at half the budget at most; standard messages get the rest.
local groupOffset, groupSeen = scan(gh, tonumber(ARGV[B + 5]), math.floor(budget / 2), function(g)
  local id = redis.call('ZRANGE', gkey(q, g), 0, 0)[1]
  local m = mkey(id)
  local t, _, f = look(m)
  if not may(t) then return skip() end
  start(id, m, f)
  removeLater(gh, g)
  removeLater(qkey('gp', q), id)
  return true
end)
-- standard messages, oldest ready first; one attempt per concurrency key.
local pk = qkey('p', q)
local busy = qkey('k', q)
local stdOffset = scan(pk, tonumber(ARGV[B + 6]), budget - groupSeen, function(mem)
    local id = string.sub(mem, 17)
    local m = mkey(id)
    local t, k, f = look(m)
    if k and redis.call('SISMEMBER', busy, k) == 1 then return skip() end
    if not may(t) then return skip() end
    removeLater(pk, mem)
    if k then redis.call('SADD', busy, k) end
    start(id, m, f)
    return true
  end)
for key in pairs(removals) do flushRemovals(key) end
if #startedIds > 0 then
  many('SADD', qkey('f', q), startedIds, 1000)
  many('ZADD', P .. 'leases', leaseList, 1000)
end
-- When it did not fill the limit: the earliest ready_at still to come (what nextReadyAt answers).
local nextAt = false
if taken < limit then
  local nowEx = '(' .. now
  for _, key in ipairs({pk, gh}) do
    local hit = redis.call('ZRANGEBYSCORE', key, nowEx, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if hit[2] and ((not nextAt) or tonumber(hit[2]) < tonumber(nextAt)) then nextAt = hit[2] end
  end
end
return {more, unknown, out, nextAt, groupOffset, stdOffset, acked}
`


/**
 * The acknowledgement of ACK and ACK_RESERVE: ARGV[from], ARGV[from + 1]… ids (to ARGV[to]).
 * Deletes each message this owner has in flight; `{1 or 0}` per id.
 */
const ACK_BODY = String.raw`
local function ackIds(from, to)
  local acked = {}
  local woken = {}
  local removed = {}
  -- What unplace and DEL would do per message, with the in-flight sets, the leases and the
  -- hashes written once per call (see 'many'); 'done' keeps an id acked twice in one call from
  -- counting twice while its hash is still there.
  local done, inFlight, leases, hashes = {}, {}, {}, {}
  for x = from, to do
    local id = ARGV[x]
    local f = done[id] and {} or redis.call('HMGET', mkey(id), unpack(FIELDS))
    if f[1] ~= 'i' or f[2] ~= OWNER then
      acked[#acked + 1] = 0
    else
      local q, g, k = f[3], f[4], f[5]
      done[id] = true
      local ids = inFlight[q]
      if not ids then
        ids = {}
        inFlight[q] = ids
      end
      ids[#ids + 1] = id
      leases[#leases + 1] = id
      hashes[#hashes + 1] = mkey(id)
      if (not g) and k then redis.call('SREM', qkey('k', q), k) end
      if g then
        redis.call('ZREM', gkey(q, g), id)
        redis.call('ZREM', qkey('gp', q), id)
        refreshGroup(q, g)
      end
      removed[q] = (removed[q] or 0) - 1
      if g or k then woken[q] = true end
      acked[#acked + 1] = 1
    end
  end
  for rq, ids in pairs(inFlight) do many('SREM', qkey('f', rq), ids, 1000) end
  many('ZREM', P .. 'leases', leases, 1000)
  many('DEL', false, hashes, 1000)
  for rq, n in pairs(removed) do countQueue(rq, n) end
  for wq in pairs(woken) do wake(wq) end
  return acked
end
`

/**
 * ARGV B = 3: queue, B+1 now, B+2 limit, B+3 lease ms, B+4 scan budget, B+5 and B+6 where the group and standard
 * scans start (from the last call's answer), B+7 check targets ('1'/'0'), then the
 * count and the targets that may start, then the count and the targets that may not. A target in
 * neither list is not started and is reported, so that the caller can ask about it and call again.
 * Returns `[more (1 when the scan budget ran out), [unknown targets], [id, attempts, seq, ready_at,
 * body]… (attempts and seq integers, ready_at too unless it has a fraction), next, group offset, standard offset, []]` where `next` is, when fewer than `limit` started, the earliest ready_at after `now`
 * of an ungrouped pending message or a pending group head (else false), then where the next
 * group and standard scans start (0 unless the budget ran out).
 */
export const RESERVE = `${PRELUDE}
local B = 3
local acked = {}
${RESERVE_BODY}`

/**
 * Finish and fetch (one call where a worker would make two): ARGV 3 the number n of ids to
 * acknowledge, ARGV 4…3+n those ids (as ACK), then RESERVE's arguments from B = 4+n. The
 * acknowledgements run first, so the concurrency keys and fifo heads they free can start at once.
 * Returns RESERVE's reply with `[1 or 0 per acknowledged id]` as its 7th element.
 */
export const ACK_RESERVE = `${PRELUDE}${ACK_BODY}
local nAck = tonumber(ARGV[3])
local acked = ackIds(4, 3 + nAck)
local B = 4 + nAck
${RESERVE_BODY}`

/** ARGV 3… ids. Deletes each message this owner has in flight; `[1 or 0]` per id. */
export const ACK = `${PRELUDE}${ACK_BODY}
return ackIds(3, #ARGV)
`

/** ARGV 3 id, 4 ready_at, 5 refund ('1'/'0'). Back to pending when this owner has it in flight; 1 or 0. */
export const RELEASE = `${PRELUDE}
local id, ready = ARGV[3], ARGV[4]
local m = mkey(id)
local f = redis.call('HMGET', m, unpack(FIELDS))
if f[1] ~= 'i' or f[2] ~= OWNER then return 0 end
unplace(id, f)
redis.call('HSET', m, 's', 'p', 'r', ready)
if ARGV[5] == '1' then
  local a = tonumber(redis.call('HGET', m, 'a'))
  if a > 0 then redis.call('HSET', m, 'a', a - 1) end
end
place(id, f[3], f[4] or nil, f[6], ready)
wake(f[3])
return 1
`

/** ARGV 3 id, 4 error JSON, 5 failed_at. A pending message, or one this owner has in flight, to the DLQ; 1 or 0. */
export const DEAD_LETTER = `${PRELUDE}
local id = ARGV[3]
local f = redis.call('HMGET', mkey(id), unpack(FIELDS))
if not f[1] or f[1] == 'd' then return 0 end
if f[1] == 'i' and f[2] ~= OWNER then return 0 end
kill(id, f, ARGV[4], ARGV[5])
return 1
`

/** ARGV 3 queue, 4 error JSON, 5 failed_at. Every pending message of the queue to its DLQ; how many. */
export const DEAD_LETTER_QUEUE = `${PRELUDE}
local q = ARGV[3]
local ids = {}
for _, mem in ipairs(redis.call('ZRANGE', qkey('p', q), 0, -1)) do ids[#ids + 1] = string.sub(mem, 17) end
for _, id in ipairs(redis.call('ZRANGE', qkey('gp', q), 0, -1)) do ids[#ids + 1] = id end
local n = 0
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', mkey(id), unpack(FIELDS))
  if f[1] == 'p' then
    kill(id, f, ARGV[4], ARGV[5])
    n = n + 1
  end
end
return n
`

const REVIVE = String.raw`
local function revive(id, q, now)
  local m = mkey(id)
  local f = redis.call('HMGET', m, 'g', 'n')
  redis.call('HSET', m, 's', 'p', 'a', 0, 'r', now)
  redis.call('HDEL', m, 'e', 'fa')
  redis.call('ZREM', qkey('x', q), id)
  place(id, q, f[1] or nil, f[2], now)
end
`

/** ARGV 3 queue, 4 now. The whole DLQ back to pending; how many. */
export const REDRIVE = `${PRELUDE}${REVIVE}
local q, now = ARGV[3], ARGV[4]
local ids = redis.call('ZRANGE', qkey('x', q), 0, -1)
for _, id in ipairs(ids) do revive(id, q, now) end
if #ids > 0 then wake(q) end
return #ids
`

/** ARGV 3 queue, 4 id, 5 now. One DLQ message back to pending; 1 or 0. */
export const REDRIVE_ONE = `${PRELUDE}${REVIVE}
local q, id = ARGV[3], ARGV[4]
if not redis.call('ZSCORE', qkey('x', q), id) then return 0 end
revive(id, q, ARGV[5])
wake(q)
return 1
`

/** ARGV 3 queue, 4 id. Deletes one DLQ message; 1 or 0. */
export const DISCARD = `${PRELUDE}
local q, id = ARGV[3], ARGV[4]
if redis.call('ZREM', qkey('x', q), id) == 0 then return 0 end
redis.call('DEL', mkey(id))
countQueue(q, -1)
return 1
`

/** ARGV 3 queue, 4 now. `[pending, delayed, in_flight, dead]`. */
export const COUNTS = `${PRELUDE}
local q, now = ARGV[3], ARGV[4]
local p, gp = qkey('p', q), qkey('gp', q)
local ready = redis.call('ZCOUNT', p, '-inf', now) + redis.call('ZCOUNT', gp, '-inf', now)
local later = redis.call('ZCOUNT', p, '(' .. now, '+inf') + redis.call('ZCOUNT', gp, '(' .. now, '+inf')
return {ready, later, redis.call('SCARD', qkey('f', q)), redis.call('ZCARD', qkey('x', q))}
`

/** ARGV 3 queue, 4 start, 5 stop (ZREVRANGE indexes). `[id, attempts, seq, ready_at, body, error, failed_at]…` */
export const DEAD_LETTERS = `${PRELUDE}
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', qkey('x', ARGV[3]), ARGV[4], ARGV[5])) do
  local f = redis.call('HMGET', mkey(id), 'a', 'n', 'r', 'b', 'e', 'fa')
  if f[4] then
    out[#out + 1] = id
    for x = 1, 6 do out[#out + 1] = f[x] or '' end
  end
end
return out
`

/**
 * ARGV 3 queue, 4 after. The earliest ready_at above `after` of an ungrouped pending message or
 * of a pending group head, or false.
 */
export const NEXT_READY = `${PRELUDE}
local q, after = ARGV[3], '(' .. ARGV[4]
local best = false
for _, key in ipairs({qkey('p', q), qkey('gh', q)}) do
  local hit = redis.call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if hit[2] and ((not best) or tonumber(hit[2]) < tonumber(best)) then best = hit[2] end
end
return best
`

/**
 * Which in-flight messages may be taken back: those whose lease expired, and, at open (not for
 * expired leases only), those of this engine's earlier processes: an owner id that starts with
 * this engine's prefix (`<engine key>/`) and is not a live backend of this process, or this
 * backend's own (recover runs while it delivers nothing).
 */
const CLAIMABLE = String.raw`
local function claimable(o, lease, clock, prefix, live)
  if lease and tonumber(lease) <= clock then return true end
  if not o then return false end
  if o == OWNER then return prefix ~= nil end
  return prefix ~= nil and prefix ~= '' and string.sub(o, 1, #prefix) == prefix and not live[o]
end
`

/**
 * ARGV 3 '1' for expired leases only, '0' to include this engine's earlier processes; 4 this
 * engine's owner prefix ('' none), 5 the count of live owners of this process, then those owners.
 * Candidates: `[id, queue, attempts]…`, at most 1000 expired ones per call.
 */
export const RECOVER_SCAN = `${PRELUDE}${CLAIMABLE}
local out = {}
local clock = redisNow()
local prefix = nil
local live = {}
if ARGV[3] == '0' then
  prefix = ARGV[4]
  for x = 1, tonumber(ARGV[5]) do live[ARGV[5 + x]] = true end
end
local seen = {}
local function add(id)
  if seen[id] then return end
  seen[id] = true
  local f = redis.call('HMGET', mkey(id), 's', 'q', 'a')
  if f[1] == 'i' then
    out[#out + 1] = id
    out[#out + 1] = f[2]
    out[#out + 1] = f[3]
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', clock, 'LIMIT', 0, 1000)) do add(id) end
if prefix ~= nil then
  -- Every lease, once at open: the messages this engine held before it restarted.
  for _, id in ipairs(redis.call('ZRANGE', P .. 'leases', 0, -1)) do
    if claimable(redis.call('HGET', mkey(id), 'o'), nil, clock, prefix, live) then add(id) end
  end
end
return out
`

/**
 * ARGV 3 now, 4 error JSON for the exhausted, 5 '1' expired only / '0' at open, 6 owner prefix,
 * 7 count of live owners, then those owners, then pairs (id, 'r' requeue | 'd' dead-letter).
 * Each applies only while the message is still in flight and still claimable (checked again here:
 * the scan and this call are not one transaction). Returns `[requeued, dead-lettered]`.
 */
export const RECOVER_APPLY = `${PRELUDE}${CLAIMABLE}
local now = ARGV[3]
local clock = redisNow()
local prefix = nil
local live = {}
local nLive = tonumber(ARGV[7])
if ARGV[5] == '0' then
  prefix = ARGV[6]
  for x = 1, nLive do live[ARGV[7 + x]] = true end
end
local requeued, dead = 0, 0
local woken = {}
for x = 8 + nLive, #ARGV, 2 do
  local id, action = ARGV[x], ARGV[x + 1]
  local m = mkey(id)
  local f = redis.call('HMGET', m, unpack(FIELDS))
  if f[1] == 'i' and claimable(f[2], redis.call('ZSCORE', P .. 'leases', id), clock, prefix, live) then
    if action == 'd' then
      kill(id, f, ARGV[4], now)
      dead = dead + 1
    else
      unplace(id, f)
      local r = redis.call('HGET', m, 'r')
      if tonumber(r) > tonumber(now) then r = now end
      redis.call('HSET', m, 's', 'p', 'r', r)
      place(id, f[3], f[4] or nil, f[6], r)
      requeued = requeued + 1
      woken[f[3]] = true
    end
  end
end
for q in pairs(woken) do wake(q) end
return {requeued, dead}
`

/** ARGV 3 lease ms, then ids. Extends the leases this owner still holds; returns the ids it no longer holds. */
export const RENEW = `${PRELUDE}
local deadline = redisNow() + tonumber(ARGV[3])
local lost = {}
for x = 4, #ARGV do
  local id = ARGV[x]
  local f = redis.call('HMGET', mkey(id), 's', 'o')
  if f[1] == 'i' and f[2] == OWNER then
    redis.call('ZADD', P .. 'leases', 'XX', deadline, id)
  else
    lost[#lost + 1] = id
  end
end
return lost
`

/** ARGV 3 id. `[s, a, n, r, q, b, e, fa]` or an empty list. */
export const GET = `${PRELUDE}
local f = redis.call('HMGET', mkey(ARGV[3]), 's', 'a', 'n', 'r', 'q', 'b', 'e', 'fa')
if not f[1] then return {} end
for x = 1, 8 do f[x] = f[x] or '' end
return f
`
