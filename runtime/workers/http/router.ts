/**
 * Route table of the HTTP worker (builtins.md §3.3): pattern parsing, conflict handling between
 * bindings of the same route shape, and request lookup.
 *
 * Routes live in a segment trie. Each node has at most one static child per segment text, one
 * parameter child (parameter names are erased, so all `:x` at one position share it) and a table
 * of wildcard routes whose `*` starts at that node. A route's *shape* is therefore exactly
 * "terminal node + method": two patterns have the same shape iff they end in the same slot.
 *
 * Lookup walks the request path segment by segment (static, then parameter, then wildcard, with
 * backtracking). Per-node counts of active routes per method prune branches that cannot answer the
 * requested method, so the cost depends on the path length and never on the number of routes.
 */
import { Errors, type SvcError } from 'svc-protocol/errors'

/** Methods an `http` trigger may bind (builtins.md §3.2), in the order `Allow` lists them. */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const
/** An upper-case method an `http` trigger may bind. */
export type HttpMethod = (typeof HTTP_METHODS)[number]

const METHOD_COUNT = HTTP_METHODS.length
const GET = 0
const HEAD = 1
const OPTIONS = 6
const METHOD_INDEX = new Map<string, number>(HTTP_METHODS.map((m, i) => [m, i]))

/** Index of an upper-case method in {@link HTTP_METHODS}; -1 for any other method. */
export function methodIndex(method: string): number {
  return METHOD_INDEX.get(method) ?? -1
}

/** `Allow` header values by method bit mask, built on first use. */
const allowCache: (string | undefined)[] = new Array(1 << METHOD_COUNT)

function allowHeader(mask: number): string {
  let value = allowCache[mask]
  if (value === undefined) {
    const names: string[] = []
    for (let i = 0; i < METHOD_COUNT; i++) if (mask & (1 << i)) names.push(HTTP_METHODS[i]!)
    value = names.join(', ')
    allowCache[mask] = value
  }
  return value
}

// ---- patterns ------------------------------------------------------------------------------

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** One segment of a parsed pattern. Static text is stored percent-decoded, like request segments. */
export type PatternSegment = { kind: 'static'; text: string } | { kind: 'param'; name: string }

/** A validated route pattern (builtins.md §3.3). */
export interface ParsedPattern {
  /** The pattern text with its leading `/` (added when missing). Delivered as `route`. */
  readonly text: string
  /** Segments before the wildcard, if any. A trailing slash is a final empty static segment. */
  readonly segments: readonly PatternSegment[]
  /** Parameter names in path order. */
  readonly paramNames: readonly string[]
  /** True when the pattern ends with `*`. */
  readonly wildcard: boolean
}

function invalidPattern(text: string, reason: string): SvcError {
  return Errors.invalidTriggerConfig(`api_path '${text}' is invalid: ${reason}`)
}

/**
 * Decodes one path segment; a segment with an invalid escape (or bytes that are not UTF-8) is
 * kept exactly as received (§3.3).
 */
export function decodeSegment(segment: string): string {
  if (segment.indexOf('%') === -1) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * Parses and validates a route pattern (builtins.md §3.3).
 *
 * @throws SvcError `INVALID_TRIGGER_CONFIG`, message `api_path '<pattern>' is invalid: <reason>`.
 * @example parsePattern('users/:id') // { text: '/users/:id', paramNames: ['id'], wildcard: false, … }
 */
export function parsePattern(pattern: string): ParsedPattern {
  if (pattern.length === 0) throw invalidPattern(pattern, 'it is empty')
  if (pattern.includes('?') || pattern.includes('#')) {
    // Requests are matched without their query string or fragment, so such a route could never match.
    throw invalidPattern(pattern, "it must not contain '?' or '#'")
  }
  const text = pattern.startsWith('/') ? pattern : `/${pattern}`
  const raw = text.slice(1).split('/')
  const segments: PatternSegment[] = []
  const paramNames: string[] = []
  let wildcard = false
  for (let i = 0; i < raw.length; i++) {
    const part = raw[i]!
    const last = i === raw.length - 1
    if (part === '') {
      // A final empty segment is a significant trailing slash ('/' itself is one empty segment).
      if (!last) throw invalidPattern(pattern, 'empty segments (//) are not allowed')
      segments.push({ kind: 'static', text: '' })
    } else if (part === '*') {
      if (!last) throw invalidPattern(pattern, "'*' is only allowed as the last segment")
      wildcard = true
    } else if (part.startsWith(':')) {
      const name = part.slice(1)
      if (!PARAM_NAME.test(name)) {
        throw invalidPattern(pattern, `parameter '${part}' must be ':' followed by [A-Za-z_][A-Za-z0-9_]*`)
      }
      if (paramNames.includes(name)) throw invalidPattern(pattern, `parameter ':${name}' appears twice`)
      paramNames.push(name)
      segments.push({ kind: 'param', name })
    } else {
      segments.push({ kind: 'static', text: decodeSegment(part) })
    }
  }
  return { text, segments, paramNames, wildcard }
}

// ---- trie ----------------------------------------------------------------------------------

/** What the router stores about one binding (one trigger id). */
export interface RouteSpec {
  /** Upper-case method from {@link HTTP_METHODS}. */
  method: HttpMethod
  pattern: ParsedPattern
  functionId: string
  namespace: string
}

interface Entry<T> {
  readonly triggerId: string
  readonly spec: RouteSpec
  data: T
  slot: Slot<T>
}

/**
 * A route being served: one pattern of one function in one namespace, shared by every binding of
 * it (replicas registering the same trigger). Lives until its last binding goes away.
 */
export interface ActiveRoute<T> {
  readonly method: HttpMethod
  /** The pattern text, delivered to handlers as `route`. */
  readonly pattern: string
  readonly paramNames: readonly string[]
  readonly functionId: string
  readonly namespace: string
  /**
   * The binding whose data requests use: the oldest live binding of the route. Bindings sharing a
   * route are replicas of one function; the engine spreads the calls over the replicas.
   */
  serving: T
  /** Trigger ids of the bindings sharing the route, oldest first. */
  readonly bindings: Map<string, Entry<T>>
}

/** One route shape: the route serving it and the refused bindings waiting for promotion. */
interface Slot<T> {
  active: ActiveRoute<T> | null
  /** Refused bindings, oldest first (§3.3: the oldest is promoted). */
  readonly pending: Entry<T>[]
  /** Nodes from the root to the node holding this slot. */
  readonly path: readonly TrieNode<T>[]
  readonly method: number
  readonly wildcard: boolean
}

class TrieNode<T> {
  readonly parent: TrieNode<T> | null
  /** Static text under which the parent holds this node; null for a parameter node or the root. */
  readonly key: string | null
  statics: Map<string, TrieNode<T>> | null = null
  param: TrieNode<T> | null = null
  /** Routes ending at this node, by method index. */
  slots: (Slot<T> | undefined)[] | null = null
  /** Routes whose `*` covers the rest of the path from this node, by method index. */
  wildSlots: (Slot<T> | undefined)[] | null = null
  /** Active routes per method in this subtree (this node included). */
  readonly counts: number[] = new Array<number>(METHOD_COUNT).fill(0)
  /** Bit i set iff counts[i] > 0. */
  mask = 0

  constructor(parent: TrieNode<T> | null, key: string | null) {
    this.parent = parent
    this.key = key
  }

  isEmpty(): boolean {
    return this.mask === 0 && this.statics === null && this.param === null && this.slots === null && this.wildSlots === null
  }
}

/** Outcome of {@link Router.lookup}. */
export type Lookup<T> =
  | {
      status: 'found'
      route: ActiveRoute<T>
      /** Data of the route's serving binding. */
      binding: T
      /** Decoded parameter values by name; the wildcard remainder under `*`. */
      params: Record<string, string>
      /** True when a HEAD request is served by the GET route (the body must be dropped). */
      viaGet: boolean
    }
  /** An OPTIONS request on a path routed for other methods: answer 204 with `Allow`. */
  | { status: 'options'; allow: string }
  /** The path is routed, but not for this method: answer 405 with `Allow`. */
  | { status: 'method_not_allowed'; allow: string }
  | { status: 'not_found' }

const NOT_FOUND = { status: 'not_found' } as const

/**
 * Sets `obj[key] = value` as an own data property, also for the key `__proto__`, which plain
 * assignment would treat as the prototype setter (parameter names, query keys and header names
 * all come from the client or the pattern).
 */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true })
  } else {
    obj[key] = value
  }
}

/** Splits a request path (starting with `/`, no query string) into decoded segments. */
function splitPath(path: string): string[] {
  const segments = path.slice(1).split('/')
  for (let i = 0; i < segments.length; i++) segments[i] = decodeSegment(segments[i]!)
  return segments
}

export interface RouterOptions {
  /**
   * Called, synchronously from {@link Router.remove} or {@link Router.add}, for each refused
   * binding that became active because the route it conflicted with went away (§3.3, protocol.md §8.3).
   */
  onPromote?: (triggerId: string) => void
}

/**
 * The HTTP route table. `T` is whatever the worker precomputes per binding (condition, middleware,
 * metadata, …); the router stores it and hands back the serving binding's value on lookup.
 *
 * @example
 * const router = new Router<string>()
 * router.add('t1', { method: 'GET', pattern: parsePattern('/users/:id'), functionId: 'users::get', namespace: 'default' }, 'data')
 * router.lookup('GET', '/users/42') // { status: 'found', params: { id: '42' }, binding: 'data', … }
 */
export class Router<T> {
  private readonly root = new TrieNode<T>(null, null)
  private readonly entries = new Map<string, Entry<T>>()
  private readonly onPromote: (triggerId: string) => void
  /** Parameter values collected by the current lookup (lookups are synchronous). */
  private readonly scratch: string[] = []
  private hitRoute: ActiveRoute<T> | null = null
  private hitWildcard: string | undefined

  constructor(options: RouterOptions = {}) {
    this.onPromote = options.onPromote ?? (() => {})
  }

  /** Number of bindings held (active and refused). */
  get size(): number {
    return this.entries.size
  }

  /** True when `triggerId` is held and serving (not refused). */
  isActive(triggerId: string): boolean {
    const entry = this.entries.get(triggerId)
    return entry !== undefined && entry.slot.active?.bindings.get(triggerId) === entry
  }

  /**
   * Adds a binding. A known trigger id is a replacement (protocol.md §5.5): the old binding is
   * removed first, unless it stays on the same route, in which case only its data is updated.
   *
   * @throws SvcError `ROUTE_CONFLICT` when another function (or another pattern text, or the
   *   same function in another namespace) holds the shape. The binding is kept as refused and is
   *   promoted, with `onPromote`, when the shape is released.
   */
  add(triggerId: string, spec: RouteSpec, data: T): void {
    const previous = this.entries.get(triggerId)
    if (previous) {
      const active = previous.slot.active
      if (active && active.bindings.get(triggerId) === previous && sameRoute(active, spec)) {
        previous.data = data
        if (active.bindings.values().next().value === previous) active.serving = data
        return
      }
      this.remove(triggerId)
    }
    const slot = this.slotFor(spec)
    const entry: Entry<T> = { triggerId, spec, data, slot }
    this.entries.set(triggerId, entry)
    const active = slot.active
    if (active === null) {
      this.activate(slot, entry)
      return
    }
    if (sameRoute(active, spec)) {
      active.bindings.set(triggerId, entry)
      return
    }
    slot.pending.push(entry)
    throw Errors.routeConflict(`${spec.method} ${spec.pattern.text}`, `${active.method} ${active.pattern}`, active.functionId)
  }

  /**
   * Removes a binding (active or refused). When it was the last binding of an active route, the
   * oldest refused binding of the shape is promoted, together with any later refused bindings of
   * the same route. Unknown ids are ignored.
   */
  remove(triggerId: string): void {
    const entry = this.entries.get(triggerId)
    if (!entry) return
    this.entries.delete(triggerId)
    const slot = entry.slot
    const pendingIndex = slot.pending.indexOf(entry)
    if (pendingIndex >= 0) {
      slot.pending.splice(pendingIndex, 1)
      return
    }
    const active = slot.active
    if (!active || !active.bindings.delete(triggerId)) return
    if (active.bindings.size > 0) {
      active.serving = active.bindings.values().next().value!.data
      return
    }
    slot.active = null
    this.count(slot, -1)
    const next = slot.pending.shift()
    if (next) {
      this.activate(slot, next)
      const promoted = [next.triggerId]
      for (let i = 0; i < slot.pending.length; ) {
        const waiting = slot.pending[i]!
        if (sameRoute(slot.active!, waiting.spec)) {
          slot.pending.splice(i, 1)
          slot.active!.bindings.set(waiting.triggerId, waiting)
          promoted.push(waiting.triggerId)
        } else {
          i++
        }
      }
      for (const id of promoted) this.onPromote(id)
      return
    }
    this.dropSlot(slot)
  }

  /**
   * Finds the route serving `method` on `path` (§3.3). `method` is upper case; `path` starts with
   * `/` and excludes the query string. HEAD falls back to the GET route; an OPTIONS request
   * without an OPTIONS route on a routed path yields `options`; another routed method yields
   * `method_not_allowed`. `Allow` lists the routed methods, HEAD when GET is routed, and OPTIONS.
   */
  lookup(method: string, path: string): Lookup<T> {
    const segments = splitPath(path)
    const index = methodIndex(method)
    let viaGet = false
    let found = index >= 0 && this.find(segments, index)
    if (!found && index === HEAD) {
      found = this.find(segments, GET)
      viaGet = found
    }
    if (found) {
      const route = this.hitRoute!
      const params: Record<string, string> = {}
      const names = route.paramNames
      const values = this.scratch
      for (let i = 0; i < names.length; i++) setOwn(params, names[i]!, values[i])
      if (this.hitWildcard !== undefined) params['*'] = this.hitWildcard
      this.hitRoute = null
      return { status: 'found', route, binding: route.serving, params, viaGet }
    }
    let mask = 0
    for (let i = 0; i < METHOD_COUNT; i++) {
      if (this.root.mask & (1 << i) && this.find(segments, i)) mask |= 1 << i
    }
    this.hitRoute = null
    if (mask === 0) return NOT_FOUND
    if (mask & (1 << GET)) mask |= 1 << HEAD
    const allow = allowHeader(mask | (1 << OPTIONS))
    return method === 'OPTIONS' ? { status: 'options', allow } : { status: 'method_not_allowed', allow }
  }

  // ---- internals -----------------------------------------------------------------------------

  private find(segments: string[], method: number): boolean {
    this.scratch.length = 0
    this.hitWildcard = undefined
    return this.walk(this.root, segments, 0, method)
  }

  private walk(node: TrieNode<T>, segments: string[], i: number, method: number): boolean {
    if ((node.mask & (1 << method)) === 0) return false
    if (i === segments.length) {
      const active = node.slots?.[method]?.active
      if (active) {
        this.hitRoute = active
        return true
      }
      return false
    }
    const segment = segments[i]!
    const child = node.statics?.get(segment)
    if (child && this.walk(child, segments, i + 1, method)) return true
    // A parameter never matches an empty segment: '/users/:id' does not serve '/users/'.
    if (node.param && segment !== '') {
      this.scratch.push(segment)
      if (this.walk(node.param, segments, i + 1, method)) return true
      this.scratch.pop()
    }
    const wild = node.wildSlots?.[method]?.active
    if (wild) {
      this.hitRoute = wild
      this.hitWildcard = i === segments.length - 1 ? segment : segments.slice(i).join('/')
      return true
    }
    return false
  }

  /** The slot of a spec's shape, creating nodes and the slot as needed. */
  private slotFor(spec: RouteSpec): Slot<T> {
    let node = this.root
    const path: TrieNode<T>[] = [node]
    for (const segment of spec.pattern.segments) {
      if (segment.kind === 'param') {
        node.param ??= new TrieNode<T>(node, null)
        node = node.param
      } else {
        node.statics ??= new Map()
        let child = node.statics.get(segment.text)
        if (!child) {
          child = new TrieNode<T>(node, segment.text)
          node.statics.set(segment.text, child)
        }
        node = child
      }
      path.push(node)
    }
    const method = methodIndex(spec.method)
    const wildcard = spec.pattern.wildcard
    let table = wildcard ? node.wildSlots : node.slots
    if (!table) {
      table = new Array<Slot<T> | undefined>(METHOD_COUNT)
      if (wildcard) node.wildSlots = table
      else node.slots = table
    }
    let slot = table[method]
    if (!slot) {
      slot = { active: null, pending: [], path, method, wildcard }
      table[method] = slot
    }
    return slot
  }

  private activate(slot: Slot<T>, entry: Entry<T>): void {
    const spec = entry.spec
    slot.active = {
      method: spec.method,
      pattern: spec.pattern.text,
      paramNames: spec.pattern.paramNames,
      functionId: spec.functionId,
      namespace: spec.namespace,
      serving: entry.data,
      bindings: new Map([[entry.triggerId, entry]]),
    }
    this.count(slot, 1)
  }

  /** Adds `delta` active routes of the slot's method along its path. */
  private count(slot: Slot<T>, delta: number): void {
    const bit = 1 << slot.method
    for (const node of slot.path) {
      const n = (node.counts[slot.method]! += delta)
      node.mask = n > 0 ? node.mask | bit : node.mask & ~bit
    }
  }

  /** Deletes an empty slot and prunes the nodes nothing needs any more. */
  private dropSlot(slot: Slot<T>): void {
    let node: TrieNode<T> | null = slot.path[slot.path.length - 1]!
    const table = slot.wildcard ? node.wildSlots : node.slots
    if (table) {
      table[slot.method] = undefined
      if (table.every((s) => s === undefined)) {
        if (slot.wildcard) node.wildSlots = null
        else node.slots = null
      }
    }
    while (node && node.parent && node.isEmpty()) {
      const parent: TrieNode<T> = node.parent
      if (node.key === null) parent.param = null
      else {
        parent.statics!.delete(node.key)
        if (parent.statics!.size === 0) parent.statics = null
      }
      node = parent
    }
  }
}

/** Same route (§3.3): same pattern text, same function id, same namespace (the shape is the slot). */
function sameRoute<T>(active: ActiveRoute<T>, spec: RouteSpec): boolean {
  return active.pattern === spec.pattern.text && active.functionId === spec.functionId && active.namespace === spec.namespace
}
