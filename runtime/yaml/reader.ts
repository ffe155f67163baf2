/**
 * A located walk over a {@link YamlSource}: what the readers of svc.worker.yaml and
 * worker-compose.yaml share. Every problem — the text's (syntax, limits) and the reader's own
 * (unknown field, wrong type) — is thrown as one error type, a {@link YamlError} subclass of the
 * reader's choosing, at `file:line:column`.
 */
import { isMap, isScalar } from 'yaml'
import type { Document, Node, YAMLMap } from 'yaml'
import { YamlError, type Place } from './errors.ts'
import { describeFound, YamlSource, type AnyPair, type Fail, type YamlSourceOptions } from './source.ts'

/** Builds the reader's error: its own {@link YamlError} subclass, with its default code unless `code` is given. */
export type LocatedErrorFactory = (file: string, place: Place | undefined, problem: string, code?: string) => YamlError

/**
 * Base of the readers that walk a YAML tree into a typed value. Subclasses read fields with
 * {@link YamlReader.string}, {@link YamlReader.oneOf}, {@link YamlReader.mapping} and fail with
 * {@link YamlReader.fail}; the text's own errors (`YamlSource`: size, syntax, nesting, aliases)
 * reach the caller through the same factory, so they have the reader's type and code too.
 *
 * @example
 * class Reader extends YamlReader {
 *   constructor(text: string) { super(text, { file: 'svc.worker.yaml' }, (file, place, problem, code) => new ManifestError(…)) }
 * }
 */
export class YamlReader {
  protected readonly source: YamlSource
  /** How the file is named in errors. */
  protected readonly file: string
  private readonly error: LocatedErrorFactory
  /** {@link YamlReader.fail} as a `Fail` for `YamlSource`'s `deref`/`keyOf`. */
  protected readonly failAt: Fail = (node, problem) => this.fail(node, problem)

  /** @throws {YamlError} of the factory's type, for a text `YamlSource` refuses */
  constructor(text: string, options: YamlSourceOptions, error: LocatedErrorFactory) {
    this.error = error
    this.file = options.file
    try {
      this.source = new YamlSource(text, options)
    } catch (err) {
      if (err instanceof YamlError) throw error(err.file, err.place, err.problem)
      throw err
    }
  }

  protected get doc(): Document.Parsed {
    return this.source.doc
  }

  /** Throws the reader's error at `node` (the document's start when null). */
  protected fail(node: Node | null | undefined, problem: string, code?: string): never {
    throw this.error(this.file, this.source.placeOf(node), problem, code)
  }

  /** Throws the reader's error at the key of `pair` (its value when it has no key). */
  protected failKey(pair: AnyPair, problem: string, code?: string): never {
    this.fail(pair.key ?? pair.value, problem, code)
  }

  /** The node an alias names, or `node` itself; null for none. */
  protected deref(node: unknown): Node | null {
    return this.source.deref(node, this.failAt)
  }

  /** The key of a mapping entry as a string; fails with `keys must be plain strings` otherwise. */
  protected keyOf(pair: AnyPair): string {
    return this.source.keyOf(pair, this.failAt)
  }

  /** The mapping under `owner`'s key; undefined for an empty value; fails with `<field> must be a mapping (got …)`. */
  protected mapping(owner: AnyPair, field: string): YAMLMap | undefined {
    const node = this.deref(owner.value)
    if (node === null || (isScalar(node) && node.value === null)) return undefined
    if (!isMap(node)) this.fail(node, `${field} must be a mapping${describeFound(node)}`)
    return node
  }

  /** A string value; fails with `<field> must be a string (got …)`, or `must not be empty` unless `allowEmpty`. */
  protected string(pair: AnyPair, field: string, allowEmpty = false): string {
    const node = this.deref(pair.value)
    if (node === null || !isScalar(node) || typeof node.value !== 'string') {
      this.fail(node ?? pair.key, `${field} must be a string${describeFound(node)}`)
    }
    const text = node.value as string
    if (!allowEmpty && text.trim() === '') this.fail(node, `${field} must not be empty`)
    return text
  }

  /**
   * One of `values`; fails with `<field> must be 'a', 'b' or 'c' (got …)` and a did-you-mean
   * from `hint` when the value is a near miss.
   */
  protected oneOf<T extends string>(pair: AnyPair, field: string, values: readonly T[], hint: (value: string) => string = () => ''): T {
    const node = this.deref(pair.value)
    const value = node !== null && isScalar(node) ? node.value : undefined
    if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
      const list = values.map((v) => `'${v}'`)
      const options = list.length === 1 ? list[0]! : `${list.slice(0, -1).join(', ')} or ${list[list.length - 1]}`
      this.fail(node ?? pair.key, `${field} must be ${options}${describeFound(node)}${typeof value === 'string' ? hint(value) : ''}`)
    }
    return value as T
  }
}
