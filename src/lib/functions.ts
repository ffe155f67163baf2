/**
 * `svc functions`: the functions registered with a running engine, as a table or JSON, from
 * `engine::functions::list` (protocol.md §11.1).
 */
import { ENGINE_PREFIX, type FunctionSummary } from 'svc-protocol'
import { triggerOnce } from './trigger.ts'
import { terminalText } from '../../runtime/index.ts'

/** One row of `svc functions` (and of its `--json` output). */
export interface ListedFunction {
  function_id: string
  /** Worker of the most recent replica; the built-in's name for engine-served ids; null when unknown. */
  worker: string | null
  namespace: string
  description: string | null
  /** True for every `engine::` id (`engine::queue::*` too) and ids marked `metadata.internal` (shown only with `--all`). */
  internal: boolean
  replica_count: number
  /** In a fleet: the engines its replicas run on (issue 19). */
  engines?: string[]
}

export interface FunctionsQuery {
  url: string
  /** Only this namespace; all namespaces when undefined. */
  namespace?: string | undefined
  /** Include internal functions. */
  all?: boolean
  /** Case-insensitive text in the id or description (the engine's `search`). */
  search?: string | undefined
  /** Only functions served by this worker. */
  worker?: string | undefined
  timeoutMs?: number
  /** The `Hint:` when the engine is unreachable (`unreachableHint` of project.ts); else the catalogue's. */
  unreachableHint?: string | undefined
}

/**
 * Lists functions, sorted by namespace then id. Without `all` no internal function is listed: the
 * engine's default listing keeps `engine::queue::*` (protocol.md §11.1, for consoles and SDKs), but
 * `svc functions` hides every `engine::` id as its help says, so the list is the user's functions.
 *
 * @throws {CliError} exit 3 when the engine is unreachable, exit 4 on timeout (see `triggerOnce`)
 */
export async function listFunctions(query: FunctionsQuery): Promise<ListedFunction[]> {
  const payload: Record<string, unknown> = {}
  if (query.all) payload.include_internal = true
  if (query.namespace !== undefined) payload.namespace = query.namespace
  if (query.search !== undefined) payload.search = query.search
  if (query.worker !== undefined) payload.worker = query.worker
  const { result } = await triggerOnce({ url: query.url, functionId: 'engine::functions::list', payload, mode: 'sync', timeoutMs: query.timeoutMs ?? 30_000, unreachableHint: query.unreachableHint })
  const functions = (result as { functions: FunctionSummary[] }).functions
  return functions
    .filter((f) => query.all === true || !internalFunction(f))
    .map((f) => ({
      function_id: f.function_id,
      worker: f.worker_name,
      namespace: f.namespace,
      description: f.description ?? null,
      internal: internalFunction(f),
      replica_count: f.replica_count,
      ...(f.engines !== undefined && { engines: f.engines }),
    }))
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.function_id.localeCompare(b.function_id))
}

/** Engine housekeeping (any `engine::` id) or marked `metadata.internal` by its worker. */
function internalFunction(f: FunctionSummary): boolean {
  return f.metadata?.internal === true || f.function_id.startsWith(ENGINE_PREFIX)
}

/** Descriptions are cut to this many characters in the table (the full text is in `--json`). */
const DESCRIPTION_WIDTH = 60

/**
 * The table of `svc functions`: `ID WORKER NAMESPACE DESCRIPTION`, columns padded, no trailing spaces;
 * in a fleet `ENGINES` after `WORKER` (where the replicas run). An empty list prints a hint line instead.
 */
export function formatFunctionsTable(functions: readonly ListedFunction[]): string {
  if (functions.length === 0) return 'No functions are registered. Start a worker (svc, or svc worker add).\n'
  const fleet = functions.some((f) => f.engines !== undefined)
  const header = fleet ? ['ID', 'WORKER', 'ENGINES', 'NAMESPACE', 'DESCRIPTION'] : ['ID', 'WORKER', 'NAMESPACE', 'DESCRIPTION']
  // Ids, names and descriptions are what workers registered: each cell one escaped line.
  const rows = functions.map((f) => [
    terminalText(f.function_id),
    terminalText(f.worker ?? '-'),
    ...(fleet ? [terminalText(f.engines?.join(',') ?? '-')] : []),
    terminalText(f.namespace),
    terminalText(shorten((f.description ?? '').replace(/\s+/g, ' ').trim()) || '-'),
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]! + 2))).join('').trimEnd()
  return [header, ...rows].map(line).join('\n') + '\n'
}

function shorten(text: string): string {
  return text.length <= DESCRIPTION_WIDTH ? text : `${text.slice(0, DESCRIPTION_WIDTH - 1)}…`
}
