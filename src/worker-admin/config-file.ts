/**
 * In-place editing of the `workers` list of config.yaml (cli.md §2.1, §4.2, §4.4).
 *
 * The file is parsed with the `yaml` Document API, which gives the position of every node; each
 * edit then splices only the lines of the entry it changes. Re-serialising the whole document
 * would normalise untouched parts (aligned comments, flow-mapping spacing, quoting), so every
 * byte outside the edited entry is kept as written. Each spliced result is parsed again and
 * compared with the same change made on plain data; when a layout is too unusual for splicing
 * (flow sequences, `workers: ~`), the change is made through the Document API instead, which
 * keeps comments and order but may reformat.
 */
import { chmodSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { isMap, isScalar, isSeq, stringify, YAMLMap, YAMLSeq } from 'yaml'
import type { Document, Node, Pair } from 'yaml'
import { CONFIG_FILE_LIMITS, readTextFileSync, YamlError, YamlSource } from '../../runtime/index.ts'
import { CliError, ExitCode } from '../lib/errors.ts'
import { isListenerName, lookupBuiltin } from './registry.ts'
import type { BuiltinInfo } from './registry.ts'

/** One `workers` entry, as far as the worker commands need it. */
export interface ConfigEntry {
  /** Position in the `workers` list (0-based). */
  index: number
  /** `name` as written (a built-in may be spelled with an alias). */
  name: string
  /** The registry entry when `name` is a built-in name or alias. */
  builtin?: BuiltinInfo
  /** True for a `svc-worker-manager` (listener) entry. */
  listener: boolean
  /** False only when the entry says `enabled: false`. */
  enabled: boolean
  /** `worker_path` as written (relative paths are relative to the project root). */
  workerPath?: string
  namespace?: string
  isolation?: string
  /** 1-based line of the entry's `name`. */
  line: number
}

/** Ordered `key: value` pairs of an entry written by the CLI. */
export type EntryFields = ReadonlyArray<readonly [key: string, value: string | boolean]>

/** config.yaml text with its `workers` entries. */
export interface ConfigSnapshot {
  text: string
  entries: ConfigEntry[]
}

/**
 * Reads the `workers` entries of config.yaml text. Only the structure the worker commands rely on
 * is checked (the engine validates the rest when it loads the file), so a file using placeholders
 * that only the engine's environment defines still works here.
 *
 * @param label the file name shown in errors (`config.yaml:12:5: …`)
 * @throws {CliError} `INVALID_CONFIG`, exit 2: invalid YAML, a top level that is not a mapping,
 *   `workers` that is not a list, an entry that is not a mapping or has no string `name`
 */
export function readEntries(text: string, label: string): ConfigSnapshot {
  const source = parseConfigText(text, label)
  const doc = source.doc
  const fail = (node: Node | null | undefined, problem: string): never => {
    throw new CliError({ code: 'INVALID_CONFIG', message: source.errorAt(node, problem).message, exitCode: ExitCode.Usage })
  }
  const top = doc.contents
  if (top === null || (isScalar(top) && top.value === null)) return { text, entries: [] }
  if (!isMap(top)) return fail(top, 'the top level must be a mapping of keys such as workers and data_dir')
  const workers = top.get('workers', true) as Node | undefined
  if (workers === undefined || workers === null || (isScalar(workers) && workers.value === null)) return { text, entries: [] }
  if (!isSeq(workers)) return fail(workers, 'workers must be a list of entries (- name: …)')
  const entries: ConfigEntry[] = []
  workers.items.forEach((item, index) => {
    const node = item as Node | null
    if (!isMap(node)) return fail(node ?? workers, 'each workers entry must be a mapping with a name')
    const nameNode = node.get('name', true) as Node | undefined
    if (!isScalar(nameNode) || typeof nameNode.value !== 'string' || nameNode.value === '') {
      return fail(nameNode ?? node, "workers entry has no 'name'")
    }
    const name = nameNode.value
    const entry: ConfigEntry = {
      index,
      name,
      listener: isListenerName(name),
      enabled: node.get('enabled') !== false,
      line: source.placeOf(nameNode).line,
    }
    const builtin = entry.listener ? undefined : lookupBuiltin(name)
    if (builtin) entry.builtin = builtin
    for (const key of ['worker_path', 'namespace', 'isolation'] as const) {
      const value = node.get(key)
      if (typeof value !== 'string') continue
      if (key === 'worker_path') entry.workerPath = value
      else entry[key] = value
    }
    entries.push(entry)
  })
  return { text, entries }
}

/**
 * Appends an entry to the end of `workers` (creating the key when missing), in the layout of the
 * existing entries.
 *
 * @example appendEntry(text, [['name', 'math-worker'], ['worker_path', './workers/math-worker']])
 */
export function appendEntry(text: string, fields: EntryFields): string {
  return edit(text, (data) => {
    data.workers = [...(data.workers ?? []), toObject(fields)]
  }, (ctx) => {
    const { seq, workersPair } = ctx
    if (seq && isBlockSeq(ctx, seq) && seq.items.length > 0) {
      const layout = seqLayout(ctx, seq)
      const last = seq.items[seq.items.length - 1] as Node
      const at = afterLine(ctx.text, last.range![1])
      return splice(ctx.text, at, at, formatEntry(fields, layout, ctx.eol), ctx.eol)
    }
    if (workersPair && !seq) {
      const value = workersPair.value as Node | null
      // `workers:` with nothing after it: the entries go on the lines below.
      if (value !== null && !(isScalar(value) && value.value === null && value.range![0] === value.range![1])) return undefined
      const keyNode = workersPair.key as Node
      const at = afterLine(ctx.text, keyNode.range![1])
      return splice(ctx.text, at, at, formatEntry(fields, { dash: 2, key: 2 }, ctx.eol), ctx.eol)
    }
    if (!workersPair && (ctx.top === null || (isMap(ctx.top) && !ctx.top.flow))) {
      const body = `workers:${ctx.eol}${formatEntry(fields, { dash: 2, key: 2 }, ctx.eol)}`
      return splice(ctx.text, ctx.text.length, ctx.text.length, body, ctx.eol)
    }
    return undefined
  }, (doc) => {
    const workers = doc.get('workers', true)
    const node = doc.createNode(toObject(fields))
    if (isSeq(workers)) workers.add(node)
    else doc.set('workers', doc.createNode([toObject(fields)]))
  })
}

/** Removes the entry at `index` of `workers`, with its lines; comments above it stay. */
export function removeEntry(text: string, index: number): string {
  return edit(text, (data) => {
    data.workers!.splice(index, 1)
  }, (ctx) => {
    const item = blockItem(ctx, index)
    if (!item) return undefined
    return splice(ctx.text, item.start, item.end, '', ctx.eol)
  }, (doc) => {
    ;(doc.get('workers', true) as YAMLSeq).delete(index)
  })
}

/** Replaces the entry at `index` with a new one written from `fields`, keeping its position. */
export function replaceEntry(text: string, index: number, fields: EntryFields): string {
  return edit(text, (data) => {
    data.workers![index] = toObject(fields)
  }, (ctx) => {
    const item = blockItem(ctx, index)
    if (!item) return undefined
    return splice(ctx.text, item.start, item.end, formatEntry(fields, seqLayout(ctx, ctx.seq!), ctx.eol), ctx.eol)
  }, (doc) => {
    ;(doc.get('workers', true) as YAMLSeq).set(index, doc.createNode(toObject(fields)))
  })
}

/**
 * Sets `enabled` of the entry at `index`. `false` rewrites an existing `enabled` value or adds the
 * line `enabled: false` below `name`; `true` deletes the `enabled` line (true is the default), or
 * rewrites the value when it shares the line of the entry's `-`.
 */
export function setEnabled(text: string, index: number, enabled: boolean): string {
  return edit(text, (data) => {
    const entry = data.workers![index] as Record<string, unknown>
    if (enabled) delete entry.enabled
    else entry.enabled = false
  }, (ctx) => {
    const item = blockItem(ctx, index)
    if (!item) return undefined
    const map = item.node
    const pair = map.items.find((p) => isScalar(p.key) && p.key.value === 'enabled') as Pair<Node, Node | null> | undefined
    if (pair) {
      const value = pair.value
      if (!value || !value.range) return undefined
      const keyStart = pair.key.range![0]
      if (enabled && lineStart(ctx.text, keyStart) !== item.start) {
        // The pair has its own line(s): drop them, trailing comment included.
        return splice(ctx.text, lineStart(ctx.text, keyStart), afterLine(ctx.text, value.range[1]), '', ctx.eol)
      }
      return ctx.text.slice(0, value.range[0]) + (enabled ? 'true' : 'false') + ctx.text.slice(value.range[1])
    }
    if (enabled) return ctx.text
    const namePair = map.items.find((p) => isScalar(p.key) && p.key.value === 'name') as Pair<Node, Node | null> | undefined
    const after = namePair?.value?.range?.[1] ?? namePair?.key.range?.[1]
    if (after === undefined) return undefined
    const at = afterLine(ctx.text, after)
    const indent = ' '.repeat(column(ctx.text, map.range![0]))
    return splice(ctx.text, at, at, `${indent}enabled: false${ctx.eol}`, ctx.eol)
  }, (doc) => {
    const entry = (doc.get('workers', true) as YAMLSeq).get(index, true) as unknown as YAMLMap
    if (enabled) entry.delete('enabled')
    else entry.set('enabled', false)
  })
}

/**
 * Writes config.yaml atomically (temporary file in the same directory, then rename) so a watching
 * engine never reads half a file. A symbolic link is followed and its target replaced; the file
 * mode is kept.
 */
export function writeConfigText(path: string, text: string): void {
  let target = path
  try {
    target = realpathSync(path)
  } catch {
    /* a new file */
  }
  let mode: number | undefined
  try {
    mode = statSync(target).mode & 0o7777
  } catch {
    mode = undefined
  }
  const temporary = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`)
  try {
    writeFileSync(temporary, text)
    if (mode !== undefined) chmodSync(temporary, mode)
    renameSync(temporary, target)
  } catch (err) {
    try {
      unlinkSync(temporary)
    } catch {
      /* already gone */
    }
    throw new CliError({
      code: 'CONFIG_WRITE_FAILED',
      message: `Cannot write ${path}: ${(err as Error).message}`,
      exitCode: ExitCode.Failure,
      cause: err,
    })
  }
}

/** Reads config.yaml; a file that cannot be read is a configuration error (exit 2). */
export function readConfigText(path: string, label: string): string {
  try {
    return readTextFileSync(path, { file: label, maxBytes: CONFIG_FILE_LIMITS.maxBytes })
  } catch (err) {
    if (err instanceof YamlError) throw new CliError({ code: 'INVALID_CONFIG', message: err.message, exitCode: ExitCode.Usage, cause: err })
    const code = (err as NodeJS.ErrnoException).code
    const problem = code === 'ENOENT' ? `Config file ${label} not found` : `Cannot read ${label}: ${(err as Error).message}`
    throw new CliError({ code: code === 'ENOENT' ? 'CONFIG_NOT_FOUND' : 'INVALID_CONFIG', message: problem, exitCode: ExitCode.Usage, cause: err })
  }
}

// -- editing machinery ---------------------------------------------------------------------------

interface EditContext {
  text: string
  eol: string
  source: YamlSource
  doc: Document.Parsed
  top: Node | null
  workersPair: Pair<Node, Node | null> | undefined
  seq: YAMLSeq | undefined
}

interface Layout {
  /** Column of the `-`. */
  dash: number
  /** Distance from the `-` to the entry's keys. */
  key: number
}

type PlainConfig = { workers?: unknown[] | null } & Record<string, unknown>

/**
 * Runs one change: `splicer` edits the text (undefined when the layout is not one it handles),
 * `expect` makes the same change on plain data, and `fallback` on the Document when splicing is
 * not possible or does not give the expected data.
 */
function edit(
  text: string,
  expect: (data: PlainConfig) => void,
  splicer: (ctx: EditContext) => string | undefined,
  fallback: (doc: Document.Parsed) => void,
): string {
  const ctx = context(text)
  const expected = normalise(ctx.source.toJS() as PlainConfig | null)
  expect(expected)
  const spliced = splicer(ctx)
  if (spliced !== undefined && sameData(spliced, expected)) return spliced
  const doc = context(text).doc
  fallback(doc)
  const rewritten = doc.toString()
  if (!sameData(rewritten, expected)) {
    throw new CliError({ code: 'CONFIG_EDIT_FAILED', message: 'Cannot edit config.yaml safely; edit it by hand', exitCode: ExitCode.Failure })
  }
  return rewritten
}

function context(text: string): EditContext {
  const source = parseConfigText(text, 'config.yaml')
  const doc = source.doc
  const top = doc.contents as Node | null
  const workersPair = isMap(top) ? (top.items.find((p) => isScalar(p.key) && p.key.value === 'workers') as Pair<Node, Node | null> | undefined) : undefined
  const value = workersPair?.value
  return {
    text,
    eol: text.includes('\r\n') ? '\r\n' : '\n',
    source,
    doc,
    top,
    workersPair,
    seq: isSeq(value) ? (value as YAMLSeq) : undefined,
  }
}

/** Plain data of a config with `enabled: true` dropped (it is the default) and an empty `workers` as `[]`, for comparisons. */
function normalise(data: PlainConfig | null): PlainConfig {
  const copy = structuredClone(data ?? {}) as PlainConfig
  // `workers:` with nothing after it is an empty list to the loader.
  if (copy.workers === null) copy.workers = []
  if (Array.isArray(copy.workers)) {
    for (const entry of copy.workers) {
      if (entry && typeof entry === 'object' && (entry as Record<string, unknown>).enabled === true) delete (entry as Record<string, unknown>).enabled
    }
  }
  return copy
}

function sameData(text: string, expected: PlainConfig): boolean {
  let data: unknown
  try {
    data = new YamlSource(text, { file: 'config.yaml' }).toJS()
  } catch (err) {
    if (err instanceof YamlError) return false
    throw err
  }
  return isDeepStrictEqual(normalise(data as PlainConfig | null), normalise(expected))
}

/**
 * config.yaml text through the shared YAML reader.
 * @throws {CliError} `INVALID_CONFIG`, exit 2, with the reader's `file:line:col: problem`
 */
function parseConfigText(text: string, label: string): YamlSource {
  try {
    return new YamlSource(text, { file: label })
  } catch (err) {
    if (err instanceof YamlError) throw new CliError({ code: 'INVALID_CONFIG', message: err.message, exitCode: ExitCode.Usage, cause: err })
    throw err
  }
}

function toObject(fields: EntryFields): Record<string, unknown> {
  return Object.fromEntries(fields)
}

function isBlockSeq(ctx: EditContext, seq: YAMLSeq): boolean {
  return !seq.flow && seq.range != null && ctx.text[seq.range[0]] === '-'
}

/** Where the `-` of the entries is and how far their keys are indented, from the first entry. */
function seqLayout(ctx: EditContext, seq: YAMLSeq): Layout {
  const dash = column(ctx.text, seq.range![0])
  const first = seq.items[0] as Node | undefined
  let key = 2
  if (first?.range && lineStart(ctx.text, first.range[0]) === lineStart(ctx.text, seq.range![0])) {
    key = Math.max(2, column(ctx.text, first.range[0]) - dash)
  }
  return { dash, key }
}

/** The lines of a block-mapping entry: from its `-` line to the end of its last line. */
function blockItem(ctx: EditContext, index: number): { node: YAMLMap; start: number; end: number } | undefined {
  const seq = ctx.seq
  if (!seq || !isBlockSeq(ctx, seq)) return undefined
  const node = seq.items[index] as Node | undefined
  if (!isMap(node) || node.flow || !node.range) return undefined
  let dash = node.range[0] - 1
  while (dash >= 0 && /\s/.test(ctx.text[dash]!)) dash--
  if (ctx.text[dash] !== '-') return undefined
  const start = lineStart(ctx.text, dash)
  if (ctx.text.slice(start, dash).trim() !== '') return undefined
  return { node, start, end: afterLine(ctx.text, node.range[1]) }
}

function formatEntry(fields: EntryFields, layout: Layout, eol: string): string {
  const inner = ' '.repeat(layout.dash + layout.key)
  return fields
    .map(([key, value], i) => {
      const prefix = i === 0 ? `${' '.repeat(layout.dash)}-${' '.repeat(layout.key - 1)}` : inner
      return `${prefix}${key}: ${scalar(value)}${eol}`
    })
    .join('')
}

/** A value as a one-line YAML scalar, quoted only when needed. */
function scalar(value: string | boolean): string {
  return stringify(value, { lineWidth: 0 }).trimEnd()
}

/** Puts the whole lines `insert` in place of text[start, end); after a last line without a newline, one is added first. */
function splice(text: string, start: number, end: number, insert: string, eol: string): string {
  let before = text.slice(0, start)
  if (insert !== '' && before !== '' && !before.endsWith('\n')) before += eol
  return before + insert + text.slice(end)
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1
}

/**
 * The offset just after the line holding the node that ends at `end` (exclusive end, which may
 * already sit after the newline).
 */
function afterLine(text: string, end: number): number {
  const newline = text.indexOf('\n', Math.max(0, end - 1))
  return newline < 0 ? text.length : newline + 1
}

function column(text: string, offset: number): number {
  return offset - lineStart(text, offset)
}
