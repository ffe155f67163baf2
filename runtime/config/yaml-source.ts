/**
 * A parsed YAML text that knows where every node is: the one piece of plumbing behind the readers
 * of config.yaml, svc.worker.yaml and worker-compose.yaml, so that each of their errors can name
 * `file:line:column` (cli.md §1: errors point at the place).
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml'
import type { Document, Node, Pair } from 'yaml'

export type AnyPair = Pair<Node | null, Node | null>

/** 1-based line and column. */
export interface Place {
  line: number
  column: number
}

/** How a reader reports a problem at a node: throws its own error type. */
export type Fail = (node: Node | null | undefined, problem: string) => never

export class YamlSource {
  readonly doc: Document.Parsed
  /** The first syntax error, if the text is not valid YAML. */
  readonly syntaxError: { place: Place; message: string } | undefined
  private readonly lines = new LineCounter()

  /** `uniqueKeys: false` leaves duplicate keys for the reader to report with its own message. */
  constructor(text: string, options: { uniqueKeys?: boolean } = {}) {
    this.doc = parseDocument(text, { lineCounter: this.lines, prettyErrors: false, uniqueKeys: options.uniqueKeys ?? true })
    const first = this.doc.errors[0]
    if (first) {
      const pos = this.lines.linePos(first.pos[0])
      this.syntaxError = { place: { line: pos.line, column: pos.col }, message: first.message }
    }
  }

  placeOf(node: Node | null | undefined): Place {
    const pos = this.lines.linePos(node?.range?.[0] ?? 0)
    return { line: pos.line, column: pos.col }
  }

  /** Follows `*alias` references; an alias to nothing fails at the alias. */
  deref(node: unknown, fail: Fail): Node | null {
    if (node === null || node === undefined) return null
    if (isAlias(node)) {
      const target = node.resolve(this.doc) as Node | undefined
      if (!target) fail(node, `unknown alias *${node.source}`)
      return target
    }
    return node as Node
  }

  /** The key of a mapping entry as a string; other keys fail with `keys must be plain strings`. */
  keyOf(pair: AnyPair, fail: Fail): string {
    const key = this.deref(pair.key, fail)
    if (key === null || !isScalar(key) || (typeof key.value !== 'string' && typeof key.value !== 'number')) {
      fail(key ?? pair.value ?? this.doc.contents, 'keys must be plain strings')
    }
    return String(key.value)
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
