/**
 * The Lua scripts of the `redis` state adapter (builtins.md §13.4). Each write is one script, so
 * it commits atomically together with its index updates and the PUBLISH of its change event.
 *
 * JSON fidelity. Redis's bundled `cjson` decodes `[]` and `{}` alike and prints numbers with 14
 * significant digits, so values would not round-trip. The scripts therefore carry their own small
 * JSON codec that keeps what it does not touch exactly as it came:
 * - objects keep their key order (a list of keys next to a map);
 * - strings stay in their escaped JSON form; since every text the scripts see was produced by
 *   `JSON.stringify` (canonical escaping), comparing escaped forms compares the strings;
 * - numbers keep their source text; numbers computed by `increment`/`decrement` are printed the
 *   way JavaScript prints a double (shortest round-trip digits, `Number.prototype.toString`
 *   layout), and non-finite results as `null`, as `JSON.stringify` does.
 * The stored text is thus what `JSON.stringify` of the JavaScript result would be (up to the
 * placement of integer-like object keys, which `JSON.parse` reorders anyway), and its byte length
 * is what `max_value_bytes` is checked against.
 *
 * The update operations mirror runtime/update-ops/update-ops.ts step by step, with the same codes
 * and messages; `redis.test.ts` proves the two agree on the shared vectors and on random input.
 */

/** Shared JSON codec and helpers, prepended to the write script. */
const CODEC = String.raw`
local byte, sub, find, format, rep, concat = string.byte, string.sub, string.find, string.format, string.rep, table.concat
local NULL = { t = 'z' }

local function decode(text)
  local pos = 1
  local function ws()
    pos = find(text, '[^ \t\r\n]', pos) or (#text + 1)
  end
  local function str()
    local i = pos + 1
    while true do
      local j = find(text, '["\\]', i)
      if not j then error('svc: unterminated JSON string') end
      if byte(text, j) == 92 then
        i = j + 2
      else
        local s = sub(text, pos + 1, j - 1)
        pos = j + 1
        return s
      end
    end
  end
  local parse
  parse = function()
    ws()
    local c = byte(text, pos)
    if c == 123 then
      pos = pos + 1
      local obj = { t = 'o', keys = {}, map = {} }
      ws()
      if byte(text, pos) == 125 then pos = pos + 1 return obj end
      while true do
        ws()
        local k = str()
        ws()
        pos = pos + 1
        local v = parse()
        if obj.map[k] == nil then obj.keys[#obj.keys + 1] = k end
        obj.map[k] = v
        ws()
        local d = byte(text, pos)
        pos = pos + 1
        if d == 125 then return obj end
      end
    elseif c == 91 then
      pos = pos + 1
      local arr = { t = 'a', items = {} }
      ws()
      if byte(text, pos) == 93 then pos = pos + 1 return arr end
      while true do
        arr.items[#arr.items + 1] = parse()
        ws()
        local d = byte(text, pos)
        pos = pos + 1
        if d == 93 then return arr end
      end
    elseif c == 34 then
      return { t = 's', s = str() }
    elseif c == 116 then
      pos = pos + 4
      return { t = 'b', v = true }
    elseif c == 102 then
      pos = pos + 5
      return { t = 'b', v = false }
    elseif c == 110 then
      pos = pos + 4
      return NULL
    end
    local s, e = find(text, '^-?%d+%.?%d*[eE]?[-+]?%d*', pos)
    if not s then error('svc: invalid JSON at byte ' .. pos) end
    pos = e + 1
    return { t = 'n', s = sub(text, s, e) }
  end
  return parse()
end

-- A double the way JavaScript prints it (ECMA-262 Number::toString), 'null' when not finite.
local function numtext(x)
  if x ~= x or x == math.huge or x == -math.huge then return 'null' end
  if x == 0 then return '0' end
  local m, e
  for p = 0, 16 do
    local s = format('%.' .. p .. 'e', x)
    if tonumber(s) == x then
      m, e = string.match(s, '^(-?[%d%.]+)e([-+]%d+)$')
      break
    end
  end
  local sign = ''
  if sub(m, 1, 1) == '-' then sign = '-' m = sub(m, 2) end
  local digits = string.gsub(m, '%.', '')
  digits = string.gsub(digits, '0+$', '')
  if digits == '' then digits = '0' end
  local k = #digits
  local n = tonumber(e) + 1
  local out
  if k <= n and n <= 21 then
    out = digits .. rep('0', n - k)
  elseif 0 < n and n <= 21 then
    out = sub(digits, 1, n) .. '.' .. sub(digits, n + 1)
  elseif -6 < n and n <= 0 then
    out = '0.' .. rep('0', -n) .. digits
  else
    local x1 = n - 1
    local es = (x1 >= 0) and ('+' .. format('%d', x1)) or format('%d', x1)
    if k == 1 then out = digits .. 'e' .. es else out = sub(digits, 1, 1) .. '.' .. sub(digits, 2) .. 'e' .. es end
  end
  return sign .. out
end

local encode
encode = function(v, out)
  local t = v.t
  if t == 'o' then
    out[#out + 1] = '{'
    for i, k in ipairs(v.keys) do
      if i > 1 then out[#out + 1] = ',' end
      out[#out + 1] = '"' .. k .. '":'
      encode(v.map[k], out)
    end
    out[#out + 1] = '}'
  elseif t == 'a' then
    out[#out + 1] = '['
    for i, item in ipairs(v.items) do
      if i > 1 then out[#out + 1] = ',' end
      encode(item, out)
    end
    out[#out + 1] = ']'
  elseif t == 's' then
    out[#out + 1] = '"' .. v.s .. '"'
  elseif t == 'n' then
    out[#out + 1] = v.s or numtext(v.v)
  elseif t == 'b' then
    out[#out + 1] = v.v and 'true' or 'false'
  else
    out[#out + 1] = 'null'
  end
end

local function tojson(v)
  local out = {}
  encode(v, out)
  return concat(out)
end

-- Escapes raw bytes (a scope or key) as JSON string content.
local function escape(s)
  return (string.gsub(s, '[%z\1-\031"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    return format('\\u%04x', byte(c))
  end))
end
`

/** The update operations of builtins.md §5 on the codec's nodes; mirrors runtime/update-ops. */
const UPDATE_OPS = String.raw`
local MAX_SEGMENTS, MAX_SEGMENT_BYTES, MAX_MERGE_KEYS, MAX_MERGE_DEPTH = 32, 256, 1024, 16
local PROTO = { ['__proto__'] = true, ['constructor'] = true, ['prototype'] = true }

local function newobj() return { t = 'o', keys = {}, map = {} } end
local function isobj(v) return v ~= nil and v.t == 'o' end

local function objset(o, k, v)
  if o.map[k] == nil then o.keys[#o.keys + 1] = k end
  o.map[k] = v
end

local function objdelete(o, k)
  o.map[k] = nil
  for i, key in ipairs(o.keys) do
    if key == k then table.remove(o.keys, i) return end
  end
end

local function typename(v)
  if v == nil then return 'nothing' end
  local t = v.t
  if t == 'z' then return 'null' end
  if t == 'o' then return 'object' end
  if t == 'a' then return 'array' end
  if t == 's' then return 'string' end
  if t == 'n' then return 'number' end
  return 'boolean'
end

local function numval(v) return v.v or tonumber(v.s) end

-- UTF-8 bytes of escaped JSON string content (lone surrogates count 3, as U+FFFD).
local function utf8bytes(s)
  local n, i, len = 0, 1, #s
  while i <= len do
    if byte(s, i) ~= 92 then
      n = n + 1
      i = i + 1
    elseif byte(s, i + 1) == 117 then
      local cp = tonumber(sub(s, i + 2, i + 5), 16)
      if cp < 0x80 then n = n + 1
      elseif cp < 0x800 then n = n + 2
      elseif cp >= 0xD800 and cp <= 0xDBFF and sub(s, i + 6, i + 7) == '\\u'
        and (tonumber(sub(s, i + 8, i + 11), 16) or 0) >= 0xDC00
        and (tonumber(sub(s, i + 8, i + 11), 16) or 0) <= 0xDFFF then
        n = n + 4
        i = i + 6
      else n = n + 3 end
      i = i + 6
    else
      n = n + 1
      i = i + 2
    end
  end
  return n
end

-- Concatenates escaped strings, joining a trailing high and a leading low surrogate escape into
-- the raw UTF-8 character, as JSON.stringify prints a well-formed pair.
local function strconcat(a, b)
  local hi = string.match(a, '\\u([dD][89abAB]%x%x)$')
  local lo = string.match(b, '^\\u([dD][c-fC-F]%x%x)')
  if hi and lo and not string.match(sub(a, 1, #a - 6), '\\$') then
    local bs = string.match(sub(a, 1, #a - 6), '(\\*)$')
    if #bs % 2 == 0 then
      local cp = 0x10000 + (tonumber(hi, 16) - 0xD800) * 0x400 + (tonumber(lo, 16) - 0xDC00)
      local ch = string.char(0xF0 + math.floor(cp / 0x40000), 0x80 + math.floor(cp / 0x1000) % 0x40,
        0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
      return sub(a, 1, #a - 6) .. ch .. sub(b, 7)
    end
  end
  return a .. b
end

local function fail(code, message) return { code = code, message = message } end

local function check_path(op, segs, where)
  if #segs > MAX_SEGMENTS then
    return fail(op .. '.path.too_deep', op .. ' at path ' .. where .. ' has ' .. #segs .. ' segments; at most ' .. MAX_SEGMENTS .. ' are allowed')
  end
  for _, seg in ipairs(segs) do
    if seg == '' then return fail(op .. '.path.empty_segment', op .. ' at path ' .. where .. ' has an empty segment') end
    local bytes = utf8bytes(seg)
    if bytes > MAX_SEGMENT_BYTES then
      return fail(op .. '.path.segment_too_long', op .. ' at path ' .. where .. ' has a segment of ' .. bytes .. ' bytes; at most ' .. MAX_SEGMENT_BYTES .. ' are allowed')
    end
    if PROTO[seg] then
      return fail(op .. '.path.proto_polluted', op .. ' at path ' .. where .. " uses the forbidden segment '" .. seg .. "'")
    end
  end
  return nil
end

-- Reads the containers of a field path without changing anything.
-- Returns 'ok', target  or  'blocked', at (0 = the root, i = segs[1..i]), found.
local function probe(root, segs)
  if root == nil or root.t == 'z' then return 'ok', nil end
  if root.t ~= 'o' then return 'blocked', 0, root end
  local c = root
  for i = 1, #segs - 1 do
    local child = c.map[segs[i]]
    if child == nil or child.t == 'z' then return 'ok', nil end
    if child.t ~= 'o' then return 'blocked', i, child end
    c = child
  end
  return 'ok', c.map[segs[#segs]]
end

local function not_object(op, where, segs, at, found)
  local location = 'the root'
  if at > 0 then
    local parts = {}
    for i = 1, at do parts[i] = segs[i] end
    location = '[' .. concat(parts, ', ') .. ']'
  end
  return fail(op .. '.target_not_object', op .. ' at path ' .. where .. ' expects ' .. location .. ' to be an object, found ' .. typename(found))
end

local function write_field(work, op, segs, where, replace, nextfn)
  local kind, a, b = probe(work.root, segs)
  if kind == 'blocked' and (a == 0 or not replace) then return not_object(op, where, segs, a, b) end
  local target = nil
  if kind == 'ok' then target = a end
  local value, failure = nextfn(target)
  if failure then return failure end
  local container = work.root
  if not isobj(container) then container = newobj() end
  work.root = container
  for i = 1, #segs - 1 do
    local child = container.map[segs[i]]
    if not isobj(child) then
      child = newobj()
      objset(container, segs[i], child)
    end
    container = child
  end
  objset(container, segs[#segs], value)
  return nil
end

local function exceeds_depth(v, limit)
  if v.t ~= 'o' and v.t ~= 'a' then return false end
  if limit == 0 then return true end
  if v.t == 'a' then
    for _, item in ipairs(v.items) do if exceeds_depth(item, limit - 1) then return true end end
  else
    for _, k in ipairs(v.keys) do if exceeds_depth(v.map[k], limit - 1) then return true end end
  end
  return false
end

local function op_set(work, segs, where, value)
  if #segs > 0 then return write_field(work, 'set', segs, where, false, function() return value end) end
  work.root = value
  return nil
end

local function op_merge(work, segs, where, value)
  if not isobj(value) then
    return fail('merge.value.not_an_object', 'merge at path ' .. where .. ' expects value to be an object, found ' .. typename(value))
  end
  if #value.keys > MAX_MERGE_KEYS then
    return fail('merge.value.too_many_keys', 'merge at path ' .. where .. ' has a value with ' .. #value.keys .. ' top-level keys; at most ' .. MAX_MERGE_KEYS .. ' are allowed')
  end
  for _, k in ipairs(value.keys) do
    if PROTO[k] then
      return fail('merge.value.proto_polluted', 'merge at path ' .. where .. " has a value with the forbidden key '" .. k .. "'")
    end
  end
  if exceeds_depth(value, MAX_MERGE_DEPTH) then
    return fail('merge.value.too_deep', 'merge at path ' .. where .. ' has a value nested deeper than ' .. MAX_MERGE_DEPTH .. ' levels')
  end
  local function merged(target)
    if isobj(target) then
      for _, k in ipairs(value.keys) do objset(target, k, value.map[k]) end
      return target
    end
    return value
  end
  if #segs > 0 then return write_field(work, 'merge', segs, where, true, merged) end
  local root = work.root
  if root ~= nil and root.t ~= 'z' and root.t ~= 'o' then
    return fail('merge.target_not_object', 'merge at path root expects an object, found ' .. typename(root))
  end
  work.root = merged(root)
  return nil
end

local function op_add(work, op, segs, where, by, nonfinite)
  if by == nil or by.t == 'z' then by = { t = 'n', v = 1 } end
  if nonfinite or by.t ~= 'n' then
    local found = 'number'
    if not nonfinite then found = typename(by) end
    return fail(op .. '.invalid_by', op .. ' at path ' .. where .. ' expects by to be a finite number, found ' .. found)
  end
  local delta = numval(by)
  if op == 'decrement' then delta = -delta end
  local function added(target)
    if target == nil then return { t = 'n', v = delta } end
    if target.t == 'n' then return { t = 'n', v = numval(target) + delta } end
    return nil, fail(op .. '.not_number', op .. ' at path ' .. where .. ' expects a number, found ' .. typename(target))
  end
  if #segs > 0 then return write_field(work, op, segs, where, false, added) end
  local root = work.root
  if root ~= nil and root.t == 'z' then root = nil end
  local value, failure = added(root)
  if failure then return failure end
  work.root = value
  return nil
end

local function op_append(work, segs, where, value)
  local function appended(target)
    if target == nil or target.t == 'z' then
      if value.t == 's' and #segs <= 1 then return value end
      return { t = 'a', items = { value } }
    end
    if target.t == 'a' then
      target.items[#target.items + 1] = value
      return target
    end
    if target.t == 's' then
      if value.t == 's' then return { t = 's', s = strconcat(target.s, value.s) } end
      return nil, fail('append.type_mismatch', 'append at path ' .. where .. ' can only append a string to a string, found a value of type ' .. typename(value))
    end
    return nil, fail('append.type_mismatch', 'append at path ' .. where .. ' expects an array, a string or nothing, found ' .. typename(target))
  end
  if #segs > 0 then return write_field(work, 'append', segs, where, true, appended) end
  local value2, failure = appended(work.root)
  if failure then return failure end
  work.root = value2
  return nil
end

local function op_remove(work, segs, where)
  if #segs == 0 then
    work.root = NULL
    return nil
  end
  local root = work.root
  if root == nil then
    work.root = newobj()
    return nil
  end
  if root.t == 'z' then return nil end
  if root.t ~= 'o' then return not_object('remove', where, segs, 0, root) end
  local c = root
  for i = 1, #segs - 1 do
    local child = c.map[segs[i]]
    if not isobj(child) then return nil end
    c = child
  end
  if c.map[segs[#segs]] ~= nil then objdelete(c, segs[#segs]) end
  return nil
end

-- Applies the ops (a decoded array) to current (a node, nil when absent).
-- nonfinite: set of zero-based op indexes whose by was a non-finite number on the caller's side.
-- Returns the value node (never nil) and the list of encoded error records.
local function apply_ops(current, ops, nonfinite)
  local work = { root = current }
  local errors = {}
  for index, op in ipairs(ops.items) do
    local kind = op.map['type'].s
    local path = op.map['path']
    local segs, where = {}, 'root'
    if path ~= nil and path.t == 's' and path.s ~= '' then
      segs = { path.s }
      where = "'" .. path.s .. "'"
    elseif path ~= nil and path.t == 'a' and #path.items > 0 then
      for i, item in ipairs(path.items) do segs[i] = item.s end
      where = '[' .. concat(segs, ', ') .. ']'
    end
    local failure = check_path(kind, segs, where)
    if not failure then
      if kind == 'set' then failure = op_set(work, segs, where, op.map['value'])
      elseif kind == 'merge' then failure = op_merge(work, segs, where, op.map['value'])
      elseif kind == 'increment' or kind == 'decrement' then
        failure = op_add(work, kind, segs, where, op.map['by'], nonfinite[index - 1])
      elseif kind == 'append' then failure = op_append(work, segs, where, op.map['value'])
      elseif kind == 'remove' then failure = op_remove(work, segs, where)
      else error('svc: unknown update operation ' .. kind) end
    end
    if failure then
      errors[#errors + 1] = '{"op_index":' .. (index - 1) .. ',"code":"' .. failure.code .. '","message":"' .. failure.message .. '"}'
    end
  end
  local root = work.root
  if root == nil then root = newobj() end
  return root, errors
end
`

/**
 * Writes. KEYS: 1 the scope's hash (key → JSON text), 2 the scope's key index (sorted set, all
 * scores 0, so members sort by bytes), 3 the index of scopes holding keys, 4 the change counter.
 * ARGV: 1 mode (`set`, `delete`, `update`), 2 scope, 3 key, 4 channel, 5 origin JSON or '', then
 * - set: 6 the value's JSON text. Returns the old text or nil.
 * - delete: returns the old text or nil (and publishes nothing when absent).
 * - update: 6 ops JSON, 7 max bytes or '', 8 comma-separated zero-based indexes of ops whose `by`
 *   was a non-finite number. Returns `{'ok', old text or nil, new text, errors JSON}` or
 *   `{'too_large', bytes}` (nothing written).
 * Every committed write INCRs the counter and PUBLISHes
 * `{"seq":n,"scope":…,"key":…,"old":…?,"new":…?,"origin":…?}` on the channel.
 */
const WRITE_BODY = String.raw`
local mode, scope, key, channel, origin = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local old = redis.call('HGET', KEYS[1], key)
local new, reply

if mode == 'delete' then
  if not old then return false end
  redis.call('HDEL', KEYS[1], key)
  redis.call('ZREM', KEYS[2], key)
  if redis.call('HLEN', KEYS[1]) == 0 then redis.call('ZREM', KEYS[3], scope) end
  reply = old
elseif mode == 'set' then
  new = ARGV[6]
  reply = old
else
  local current = nil
  if old then current = decode(old) end
  local nonfinite = {}
  for i in string.gmatch(ARGV[8], '%d+') do nonfinite[tonumber(i)] = true end
  local value, errors = apply_ops(current, decode(ARGV[6]), nonfinite)
  new = tojson(value)
  if ARGV[7] ~= '' and #new > tonumber(ARGV[7]) then return { 'too_large', #new } end
  reply = { 'ok', old, new, '[' .. concat(errors, ',') .. ']' }
end

if new then
  redis.call('HSET', KEYS[1], key, new)
  redis.call('ZADD', KEYS[2], 0, key)
  redis.call('ZADD', KEYS[3], 0, scope)
end
local seq = redis.call('INCR', KEYS[4])
local event = { '{"seq":', seq, ',"scope":"', escape(scope), '","key":"', escape(key), '"' }
if old then event[#event + 1] = ',"old":' .. old end
if new then event[#event + 1] = ',"new":' .. new end
if origin ~= '' then event[#event + 1] = ',"origin":' .. origin end
event[#event + 1] = '}'
redis.call('PUBLISH', channel, concat(event))
`

export const WRITE_SCRIPT = `${CODEC}${UPDATE_OPS}${WRITE_BODY}return reply\n`

/**
 * {@link WRITE_SCRIPT}, except that a committed write returns `{seq, reply}` (the change's sequence
 * number beside the reply above), so the caller can wait until its own change came back on the
 * channel. Used by the redis stream adapter (runtime/adapters/stream/redis.ts).
 */
export const SEQUENCED_WRITE_SCRIPT = `${CODEC}${UPDATE_OPS}${WRITE_BODY}return { seq, reply }\n`

/**
 * Reads a page of one scope, keys and values from the same snapshot. KEYS: 1 hash, 2 key index.
 * ARGV: 1 min and 2 max (ZRANGEBYLEX bounds), 3 offset, 4 limit (-1: all), 5 '1' to return values.
 * Returns `{total, keys, values}`.
 */
export const PAGE_SCRIPT = String.raw`
local total = redis.call('ZLEXCOUNT', KEYS[2], ARGV[1], ARGV[2])
local keys = {}
if ARGV[4] ~= '0' then
  keys = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', ARGV[3], ARGV[4])
end
local values = {}
if ARGV[5] == '1' then
  for i = 1, #keys, 500 do
    local chunk = redis.call('HMGET', KEYS[1], unpack(keys, i, math.min(i + 499, #keys)))
    for j = 1, #chunk do values[#values + 1] = chunk[j] end
  end
end
return { total, keys, values }
`

/**
 * Applies update operations without storing anything: ARGV 1 the current JSON text or '' for an
 * absent key, 2 ops JSON, 3 non-finite `by` indexes as for {@link WRITE_SCRIPT}. Returns
 * `{new text, errors JSON}`. Used by the tests that hold the Lua implementation against
 * runtime/update-ops.
 */
export const APPLY_OPS_SCRIPT = `${CODEC}${UPDATE_OPS}${String.raw`
local current = nil
if ARGV[1] ~= '' then current = decode(ARGV[1]) end
local nonfinite = {}
for i in string.gmatch(ARGV[3], '%d+') do nonfinite[tonumber(i)] = true end
local value, errors = apply_ops(current, decode(ARGV[2]), nonfinite)
return { tojson(value), '[' .. concat(errors, ',') .. ']' }
`}`
