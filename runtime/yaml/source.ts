/**
 * The one way svc reads YAML (config.yaml, settings files, svc.worker.yaml, worker-compose.yaml and
 * the CLI's edits of them): a parsed text that knows where every node is, so that each error can
 * name `file:line:column` (cli.md §1), and that is safe to walk whatever the text holds.
 *
 * The `yaml` library parses; this module bounds what it is given and what its result costs:
 * - size: a text over {@link YamlLimits.maxBytes} is refused before parsing (the library parses
 *   about a MiB a second, {@link MAX_YAML_BYTES});
 * - nesting: the parser's stack is watched token by token, so a deep text is refused before the
 *   library's recursive composer sees it (thousands of levels overflow the stack, and near the
 *   limit V8 can abort the whole process); the nesting of the parsed tree, aliases expanded, is
 *   then held to {@link YamlLimits.maxDepth};
 * - aliases: every alias is resolved once, in one pass, and the nodes and text aliases add to the
 *   expanded tree are counted; beyond {@link YamlLimits.maxAliasNodes} nodes or
 *   {@link YamlLimits.maxBytes} bytes the text is refused at the alias that crossed the limit (a
 *   "billion laughs" document stops at its fifth line). Readers then follow
 *   aliases through {@link YamlSource.deref}, in constant time (the library's `Alias.resolve`
 *   scans the whole document on each call);
 * - duplicate keys are found with one set per mapping (the library's `uniqueKeys` compares each
 *   key with every earlier one: a 30,000-key mapping took 15 s).
 */
import { Composer, isAlias, isMap, isPair, isScalar, isSeq, Lexer, LineCounter, Parser } from 'yaml'
import type { Alias, CST, Document, Node, Pair, ParsedNode } from 'yaml'
import { MAX_JSON_DEPTH } from 'svc-protocol/json'
import { YamlError, type Place } from './errors.ts'

export type AnyPair = Pair<Node | null, Node | null>

/** How a reader reports a problem at a node: throws its own error type. */
export type Fail = (node: Node | null | undefined, problem: string) => never

/** What a YAML text may cost. */
export interface YamlLimits {
  /** Largest text, bytes of UTF-8. */
  maxBytes: number
  /** Deepest nesting of mappings and sequences, aliases expanded, levels (a scalar document is 0). */
  maxDepth: number
  /**
   * Most nodes the aliases of a document may add once expanded (an alias of a 10-node list adds
   * 10). The text they add is held to `maxBytes` as well: an alias of a long string is as costly
   * as the string.
   */
  maxAliasNodes: number
}

/** Nodes aliases may add: far beyond any hand-written reuse, and cheap to walk. */
export const MAX_ALIAS_NODES = 10_000

/**
 * Largest YAML file svc reads, bytes. The library lexes and parses about a MiB a second on an
 * idle core whatever the text, so this bounds the time a file can take (a 4 MiB text written to
 * be slow took 25 s on a loaded machine); it is fifty times the largest real config.yaml.
 */
export const MAX_YAML_BYTES = 1024 * 1024

/**
 * Limits of config.yaml, svc.worker.yaml and worker-compose.yaml: {@link MAX_YAML_BYTES}, nesting
 * as deep as a JSON value from outside may be (MAX_JSON_DEPTH, 128), {@link MAX_ALIAS_NODES}.
 */
export const CONFIG_FILE_LIMITS: Readonly<YamlLimits> = Object.freeze({ maxBytes: MAX_YAML_BYTES, maxDepth: MAX_JSON_DEPTH, maxAliasNodes: MAX_ALIAS_NODES })

export interface YamlSourceOptions {
  /** How the file is named in errors (`config.yaml`, `workers/math/svc.worker.yaml`). */
  file: string
  /** Default {@link CONFIG_FILE_LIMITS}. */
  limits?: Readonly<YamlLimits>
  /** Refuse a mapping with the same key twice (`invalid YAML: Map keys must be unique`). Default true; false leaves duplicates for the reader to report with its own message. */
  uniqueKeys?: boolean
}

/** Expanded size and nesting of a node, aliases followed. */
interface Cost {
  nodes: number
  /** Text of its scalars, bytes of source. */
  bytes: number
  depth: number
}

/**
 * A parsed YAML text within limits.
 *
 * @example
 * const source = new YamlSource(text, { file: 'config.yaml' })   // throws YamlError
 * const value = source.toJS()                                     // plain data, aliases expanded
 */
export class YamlSource {
  readonly doc: Document.Parsed
  readonly file: string
  private readonly lines = new LineCounter()
  /** Each alias's target, found once. */
  private readonly targets = new Map<Alias, Node>()

  /**
   * Parses `text` and checks it against the limits.
   * @throws {YamlError} `is <n> bytes, more than the <limit>-byte limit` (no place);
   *   `invalid YAML: <library message>`; `nests deeper than <n> levels`;
   *   `alias *x expands the document too much (…)`; `alias *x refers to a node that
   *   contains it`; `unknown alias *x`; `invalid YAML: Map keys must be unique`.
   */
  constructor(text: string, options: YamlSourceOptions) {
    this.file = options.file
    const limits = options.limits ?? CONFIG_FILE_LIMITS
    const bytes = Buffer.byteLength(text, 'utf8')
    if (bytes > limits.maxBytes) throw new YamlError(this.file, undefined, `is ${bytes} bytes, more than the ${limits.maxBytes}-byte limit`)
    this.doc = this.parse(text, limits.maxDepth)
    const first = this.doc.errors[0]
    if (first) throw new YamlError(this.file, this.placeAt(first.pos[0]), `invalid YAML: ${firstLine(first.message)}`)
    new Analysis(this, limits, options.uniqueKeys ?? true, this.targets).run()
  }

  placeOf(node: Node | null | undefined): Place {
    return this.placeAt(node?.range?.[0] ?? 0)
  }

  /** A {@link YamlError} at `node`, for readers without an error type of their own. */
  errorAt(node: Node | null | undefined, problem: string): YamlError {
    return new YamlError(this.file, this.placeOf(node), problem)
  }

  /** Follows an `*alias` to the node it names (aliases were resolved and checked at parse). */
  deref(node: unknown, fail?: Fail): Node | null {
    if (node === null || node === undefined) return null
    if (isAlias(node)) {
      const target = this.targets.get(node)
      if (target) return target
      // An alias the parse did not see (a node added by an edit after parsing).
      const resolved = node.resolve(this.doc) as Node | undefined
      if (!resolved) return (fail ?? this.thrower)(node, `unknown alias *${node.source}`)
      return resolved
    }
    return node as Node
  }

  /** The key of a mapping entry as a string; other keys fail with `keys must be plain strings`. */
  keyOf(pair: AnyPair, fail: Fail = this.thrower): string {
    const key = this.deref(pair.key, fail)
    if (key === null || !isScalar(key) || (typeof key.value !== 'string' && typeof key.value !== 'number')) {
      fail(key ?? pair.value ?? this.doc.contents, 'keys must be plain strings')
    }
    return String(key.value)
  }

  /**
   * Plain data of `node` (default: the whole document), aliases expanded into copies: mappings
   * become objects (keys as strings; `__proto__` an own key; YAML 1.1 `<<` merge keys merged),
   * sequences arrays, scalars their value. Linear in the expanded size, which the limits bound.
   */
  toJS(node: Node | AnyPair | null | undefined = this.doc.contents): unknown {
    const target = isPair(node) ? node : this.deref(node)
    if (target === null) return null
    if (isScalar(target)) return target.toJSON()
    if (isSeq(target)) return (target.items as Array<Node | AnyPair | null>).map((item) => this.toJS(item))
    if (isMap(target) || isPair(target)) {
      const out: Record<string, unknown> = {}
      const set = (name: string, value: unknown) => Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true })
      for (const pair of isPair(target) ? [target as AnyPair] : (target.items as AnyPair[])) {
        const keyNode = this.deref(pair.key)
        if (isScalar(keyNode) && typeof keyNode.value === 'symbol') {
          // A YAML 1.1 merge key (`<<: *defaults`): keys of the merged mappings that are not set yet.
          const sources = this.deref(pair.value)
          for (const source of isSeq(sources) ? (sources.items as Array<Node | null>) : [sources]) {
            const merged = this.toJS(source)
            if (typeof merged !== 'object' || merged === null || Array.isArray(merged)) continue
            for (const [name, value] of Object.entries(merged)) if (!Object.hasOwn(out, name)) set(name, value)
          }
          continue
        }
        const key = this.toJS(pair.key)
        set(key === null || key === undefined ? '' : typeof key === 'object' ? JSON.stringify(key) : String(key), this.toJS(pair.value))
      }
      return out
    }
    return null
  }

  private readonly thrower: Fail = (node, problem) => {
    throw this.errorAt(node, problem)
  }

  /**
   * The parser's tokens, refused once its stack passes `maxStack`. The stack holds the document,
   * the open collections and a pending token or two: twice the nesting allowed leaves room for
   * any layout, and the exact nesting is checked on the tree, aliases expanded.
   */
  private *tokens(text: string, parser: Parser, maxStack: number, maxDepth: number): Generator<CST.Token> {
    for (const lexeme of new Lexer().lex(text)) {
      yield* parser.next(lexeme)
      if (parser.stack.length > maxStack) throw new YamlError(this.file, this.placeAt(parser.offset), `nests deeper than ${maxDepth} levels`)
    }
    yield* parser.end()
  }

  private placeAt(offset: number): Place {
    const pos = this.lines.linePos(offset)
    return { line: pos.line, column: pos.col }
  }

  /**
   * The library's `parseDocument`, with the parser's stack watched: the composer that turns the
   * parser's tokens into nodes recurses once per level, so depth is refused before it runs.
   */
  private parse(text: string, maxDepth: number): Document.Parsed {
    const maxStack = 2 * maxDepth + 8
    const parser = new Parser(this.lines.addNewLine)
    const composer = new Composer<ParsedNode, true>({ uniqueKeys: false, prettyErrors: false })
    this.lines.addNewLine(0)
    const tokens = this.tokens(text, parser, 2 * maxDepth + 8, maxDepth)
    let doc: Document.Parsed | undefined
    for (const next of composer.compose(tokens, true, text.length)) {
      if (doc === undefined) doc = next
      else {
        const place = this.placeAt(next.range[0])
        throw new YamlError(this.file, place, 'invalid YAML: the file holds more than one document (a second ---); write one')
      }
    }
    return doc!
  }
}

/** One pass over the tree: resolves aliases, counts what they add, measures nesting, finds duplicate keys. */
class Analysis {
  private readonly anchors = new Map<string, Node>()
  /** Cost of each anchored node walked so far. */
  private readonly costs = new Map<Node, Cost>()
  /** Anchored nodes being walked (an alias to one of them would make the tree infinite). */
  private readonly open = new Set<Node>()
  private aliasNodes = 0
  private aliasBytes = 0

  private readonly source: YamlSource
  private readonly limits: Readonly<YamlLimits>
  private readonly uniqueKeys: boolean
  private readonly targets: Map<Alias, Node>

  constructor(source: YamlSource, limits: Readonly<YamlLimits>, uniqueKeys: boolean, targets: Map<Alias, Node>) {
    this.source = source
    this.limits = limits
    this.uniqueKeys = uniqueKeys
    this.targets = targets
  }

  run(): void {
    this.walk(this.source.doc.contents, 0)
  }

  /** `level`: collections around `node`. */
  private walk(node: Node | null | undefined, level: number): Cost {
    if (node === null || node === undefined) return { nodes: 0, bytes: 0, depth: 0 }
    if (isAlias(node)) return this.alias(node, level)
    const anchor = node.anchor
    if (anchor !== undefined) {
      // The library resolves an alias to the last anchor of that name before it.
      this.anchors.set(anchor, node)
      this.open.add(node)
    }
    let cost: Cost = { nodes: 1, bytes: node.range ? node.range[1] - node.range[0] : 0, depth: 0 }
    if (isMap(node) || isSeq(node)) {
      if (level + 1 > this.limits.maxDepth) this.fail(node, `nests deeper than ${this.limits.maxDepth} levels`)
      const keys = this.uniqueKeys && isMap(node) ? new Set<unknown>() : undefined
      let nodes = 1
      let bytes = 0
      let depth = 0
      for (const item of node.items as Array<Node | AnyPair | null>) {
        const children = isPair(item) ? [item.key as Node | null, item.value as Node | null] : [item]
        if (keys && isPair(item)) {
          const key = isAlias(item.key) ? undefined : (item.key as Node | null)
          if (key !== null && key !== undefined && isScalar(key)) {
            if (keys.has(key.value)) this.fail(key, 'invalid YAML: Map keys must be unique')
            keys.add(key.value)
          }
        }
        for (const child of children) {
          const c = this.walk(child, level + 1)
          nodes += c.nodes
          bytes += c.bytes
          if (c.depth > depth) depth = c.depth
        }
      }
      cost = { nodes, bytes, depth: depth + 1 }
    }
    if (anchor !== undefined) {
      this.open.delete(node)
      this.costs.set(node, cost)
    }
    return cost
  }

  private alias(node: Alias, level: number): Cost {
    const target = this.anchors.get(node.source)
    if (target === undefined) this.fail(node, `unknown alias *${node.source}`)
    if (this.open.has(target)) this.fail(node, `alias *${node.source} refers to a node that contains it`)
    this.targets.set(node, target)
    const cost = this.costs.get(target)!
    this.aliasNodes += cost.nodes
    this.aliasBytes += cost.bytes
    if (this.aliasNodes > this.limits.maxAliasNodes || this.aliasBytes > this.limits.maxBytes) {
      this.fail(
        node,
        `alias *${node.source} expands the document too much (aliases may add at most ${this.limits.maxAliasNodes} nodes and ${this.limits.maxBytes} bytes); write the values out, or use fewer aliases`,
      )
    }
    if (level + cost.depth > this.limits.maxDepth) this.fail(node, `nests deeper than ${this.limits.maxDepth} levels once *${node.source} is expanded`)
    return cost
  }

  private fail(node: Node, problem: string): never {
    throw this.source.errorAt(node, problem)
  }
}

/** ` (got …)`: describes the value found where another type was expected, for error messages. */
export function describeFound(node: Node | null, value?: unknown): string {
  if (node === null) return ' (got nothing)'
  if (isMap(node)) return ' (got a mapping)'
  if (isSeq(node)) return ' (got a list)'
  const v = value !== undefined ? value : isScalar(node) ? node.value : undefined
  if (v === null || v === undefined) return ' (got nothing)'
  if (typeof v === 'string') return ` (got '${v}')`
  return ` (got ${String(v)})`
}

function firstLine(text: string): string {
  return text.split('\n')[0]!.trim()
}
