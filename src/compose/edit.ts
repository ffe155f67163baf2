/**
 * In-place edits of `worker-compose.yaml` for `compose::add` and `compose::remove` (cli.md §4.7).
 * The yaml Document API locates the `containers` mapping; when it is a non-empty block mapping the
 * entry is spliced into (or cut out of) the text, so every other byte — comments, blank lines, flow
 * spacing, quoting — stays as the user wrote it. Other shapes (`containers: {}`, missing, flow
 * style) are edited through the Document and re-printed, which keeps comments and key order.
 * Callers validate the result with `parseComposeFile` before writing it.
 */
import { renameSync, writeFileSync } from 'node:fs'
import { isMap, isScalar, stringify, YAMLMap } from 'yaml'
import type { Document, Node, Pair } from 'yaml'
import { YamlError, YamlSource } from '../../runtime/index.ts'
import { ComposeError } from './errors.ts'

/** What a project with no workers is written as (cli.md §2.3). */
export const EMPTY_COMPOSE_TEXT = 'containers: {}\n'

/** Never fold long values: a folded command or URL would change the file more than asked. */
const STRINGIFY = { lineWidth: 0 } as const

type AnyPair = Pair<Node | null, Node | null>

function load(text: string, label: string): Document.Parsed {
  let doc: Document.Parsed
  try {
    doc = new YamlSource(text, { file: label, uniqueKeys: false }).doc
  } catch (err) {
    if (err instanceof YamlError) throw new ComposeError('INVALID_COMPOSE_FILE', `${err.message} (the file cannot be edited)`)
    throw err
  }
  if (doc.contents !== null && !isMap(doc.contents)) {
    throw new ComposeError('INVALID_COMPOSE_FILE', `${label}: cannot be edited: the top level is not a mapping`)
  }
  return doc
}

/** The `containers` node as parsed: a mapping, or undefined when absent or null. */
function parsedContainers(doc: Document.Parsed, label: string): YAMLMap | undefined {
  const node = doc.contents === null ? undefined : doc.get('containers', true)
  if (node === undefined || node === null || (isScalar(node) && node.value === null)) return undefined
  if (!isMap(node)) throw new ComposeError('INVALID_COMPOSE_FILE', `${label}: containers is not a mapping`)
  return node
}

/**
 * Adds `key: {worker}` at the end of `containers`. `text` undefined means the file does not exist
 * yet: it starts as {@link EMPTY_COMPOSE_TEXT}.
 *
 * @throws {ComposeError} `INVALID_COMPOSE_FILE` when the text is not YAML with a mapping at the top.
 * @example addContainerText('containers: {}\n', 'api', 'path://./workers/api')
 * // 'containers:\n  api:\n    worker: path://./workers/api\n'
 */
export function addContainerText(text: string | undefined, key: string, worker: string, label = 'worker-compose.yaml'): string {
  const source = text ?? EMPTY_COMPOSE_TEXT
  const doc = load(source, label)
  const containers = parsedContainers(doc, label)
  if (containers && !containers.flow && containers.items.length > 0) {
    const items = containers.items as AnyPair[]
    const indent = ' '.repeat(columnOf(source, items[0]!.key!.range![0]))
    const at = endOfEntry(source, items[items.length - 1]!)
    const entry = `${indent}${stringify(key).trimEnd()}:\n${indent}  worker: ${stringify(worker, STRINGIFY).trimEnd()}\n`
    const before = source.slice(0, at)
    return `${before}${before.endsWith('\n') ? '' : '\n'}${entry}${source.slice(at)}`
  }
  // `containers: {}`, `containers:` or no key at all: re-print through the Document.
  if (doc.contents === null) doc.contents = doc.createNode({}) as never
  let map = containers
  if (!map) {
    map = new YAMLMap()
    doc.set('containers', map)
  }
  if (map.items.length === 0) map.flow = false
  map.set(key, doc.createNode({ worker }))
  return doc.toString(STRINGIFY)
}

/**
 * Removes `key` from `containers`, with the comment lines right above it; an emptied mapping is
 * written `{}`. Text without that key is returned unchanged.
 *
 * @throws {ComposeError} `INVALID_COMPOSE_FILE` when the text cannot be edited.
 */
export function removeContainerText(text: string, key: string, label = 'worker-compose.yaml'): string {
  const doc = load(text, label)
  const containers = parsedContainers(doc, label)
  if (!containers) return text
  const items = containers.items as AnyPair[]
  const index = items.findIndex((p) => isScalar(p.key) && String(p.key.value) === key)
  if (index < 0) return text
  if (!containers.flow && items.length > 1) {
    const pair = items[index]!
    let start = lineStart(text, pair.key!.range![0])
    const indent = text.slice(start, pair.key!.range![0])
    // Comment lines directly above the entry, at its indentation, describe it: they go too.
    while (start > 0) {
      const previous = lineStart(text, start - 1)
      if (!text.slice(previous, start).startsWith(`${indent}#`)) break
      start = previous
    }
    return text.slice(0, start) + text.slice(endOfEntry(text, pair))
  }
  containers.delete(key)
  if (containers.items.length === 0) containers.flow = true
  return doc.toString(STRINGIFY)
}

/** Offset just after the line where a pair's value (or key) ends, trailing comment included. */
function endOfEntry(text: string, pair: AnyPair): number {
  const node = pair.value ?? pair.key!
  const end = node.range![1]
  if (end > 0 && text[end - 1] === '\n') return end
  const newline = text.indexOf('\n', end)
  return newline < 0 ? text.length : newline + 1
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1
}

function columnOf(text: string, offset: number): number {
  return offset - lineStart(text, offset)
}

/** Writes through a temporary file and a rename, so a reader never sees half a file. */
export function writeFileAtomic(path: string, text: string): void {
  const temp = `${path}.${process.pid}.tmp`
  writeFileSync(temp, text)
  renameSync(temp, path)
}
