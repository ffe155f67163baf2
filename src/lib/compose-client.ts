/**
 * The client side of the compose daemon (cli.md §4.7): `svc compose status|down|restart|remove` call
 * `compose::*` in the daemon's namespace so users need not spell `svc trigger -n <ns> compose::…`.
 */
import { resolve } from 'node:path'
import { Flags } from '@oclif/core'
import type { WorkerSummary } from 'svc-protocol'
import type { ContainerResult, OpResult, RemoveResult, StatusResult } from '../compose/types.ts'
import { terminalLines, terminalText } from '../../runtime/index.ts'
import { CliError, ExitCode, usageError } from './errors.ts'
import { engineNotice, projectEngine } from './project.ts'
import { shownAddresses } from './engine-addresses.ts'
import { triggerOnce } from './trigger.ts'

/** Flags of the client commands (`svc compose status|down|restart|remove`). */
export const composeClientFlags = {
  namespace: Flags.string({ char: 'n', summary: "The daemon's namespace (default: the only compose daemon connected to the engine)" }),
  engine: Flags.string({ aliases: ['url'], summary: 'Engine URL (default: SVC_URL, else the listener of config.yaml, else ws://127.0.0.1:49134)' }),
  file: Flags.string({ char: 'f', summary: "Compose file (default: the daemon's worker-compose.yaml)" }),
  'timeout-ms': Flags.integer({ summary: 'How long to wait for the daemon, ms', default: 120_000, min: 1 }),
  json: Flags.boolean({ summary: "Print the daemon's result as one JSON document" }),
}

export interface ComposeTarget {
  /** The engine's address: one `ws://` URL or several separated by commas (`triggerOnce` uses the first that answers). */
  url: string
  /** `-n`; found from the connected daemons when undefined ({@link findDaemonNamespace}). */
  namespace?: string | undefined
  /** `-f`, resolved against `cwd` so that the daemon (which may run elsewhere) reads the same file. */
  file?: string | undefined
  cwd: string
  timeoutMs: number
}

/**
 * The target of a `svc compose <verb>` command from its {@link composeClientFlags}: the project's
 * engine (refusing another project's, issue 11) and the current directory. Writes the engine's
 * notice (`engineNotice`: outside a project, that none was found and which address is used) to
 * `stderr` unless `json`.
 * @throws CliError when the address belongs to another project's engine
 */
export function composeTarget(
  flags: { engine?: string | undefined; namespace?: string | undefined; file?: string | undefined; 'timeout-ms': number; json?: boolean | undefined },
  stderr: (text: string) => void = (text) => void process.stderr.write(text),
): ComposeTarget {
  const cwd = process.cwd()
  const target = projectEngine({ flag: flags.engine, cwd })
  // Which engine is asked (outside a project: that none was found), as svc trigger and svc functions say it.
  const notice = engineNotice(target)
  if (notice !== undefined && flags.json !== true) stderr(notice)
  // Every address of an --engine/SVC_URL list: triggerOnce uses the first engine that answers.
  return { url: target.url, namespace: flags.namespace, file: flags.file, cwd, timeoutMs: flags['timeout-ms'] }
}

/**
 * The namespace of the only compose daemon connected to the engine.
 *
 * @throws {CliError} `NO_COMPOSE_DAEMON` (exit 1) when none runs; exit 2 naming them when several run
 */
export async function findDaemonNamespace(url: string, timeoutMs: number): Promise<string> {
  const { result } = await triggerOnce({ url, functionId: 'engine::workers::list', payload: {}, mode: 'sync', timeoutMs })
  const namespaces = [...new Set((result as { workers: WorkerSummary[] }).workers.filter((w) => w.name === 'compose').map((w) => w.namespace))].sort()
  if (namespaces.length === 1) return namespaces[0]!
  if (namespaces.length === 0) {
    throw new CliError({
      code: 'NO_COMPOSE_DAEMON',
      message: `No compose daemon is connected to the engine at ${shownAddresses(url)}`,
      hint: 'start one with svc compose -n <namespace> (or svc compose up)',
      exitCode: ExitCode.Failure,
    })
  }
  throw usageError(`Several compose daemons are running (namespaces ${namespaces.join(', ')}); pass -n <namespace>`)
}

/**
 * Invokes `compose::<fn>` with `payload` (plus `file` when given) in the daemon's namespace.
 *
 * @throws {CliError} as `triggerOnce`: exit 1 `<CODE>: <message>` for a compose error, 3, 4
 */
export async function callCompose<T>(target: ComposeTarget, fn: string, payload: Record<string, unknown> = {}): Promise<{ namespace: string; result: T }> {
  const namespace = target.namespace ?? (await findDaemonNamespace(target.url, target.timeoutMs))
  const body = { ...payload, ...(target.file !== undefined ? { file: resolve(target.cwd, target.file) } : {}) }
  const { result } = await triggerOnce({ url: target.url, functionId: `compose::${fn}`, payload: body, namespace, mode: 'sync', timeoutMs: target.timeoutMs })
  return { namespace, result: result as T }
}

/** A table of padded columns; cells come from the daemon (names, errors), so each is one escaped line. */
function table(header: string[], rows: string[][]): string {
  rows = rows.map((r) => r.map(terminalText))
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]! + 2))).join('').trimEnd()
  return [header, ...rows].map(line).join('\n') + '\n'
}

/** `svc compose status`: a heading line, then one row per container. */
export function formatStatus(status: StatusResult): string {
  const head = `${terminalText(`${status.file} in namespace ${status.namespace} (daemon pid ${status.daemon_pid})`)}\n`
  if (status.containers.length === 0) return `${head}No containers (containers: {})\n`
  return (
    head +
    table(
      ['CONTAINER', 'WORKER', 'STATE', 'PID', 'RESTARTS', 'STARTED', 'LAST ERROR'],
      status.containers.map((c) => [
        c.container,
        `${c.worker}${c.isolation === 'microvm' ? ` (microvm, ${Math.round((c.vm_rss_bytes ?? 0) / 1048576)} MiB)` : ''}`,
        c.state,
        c.pid === null ? '-' : String(c.pid),
        String(c.restarts),
        c.started_at ?? '-',
        c.last_error ? `${c.last_error.code}: ${c.last_error.message.split('\n')[0]}` : '-',
      ]),
    )
  )
}

function containerLine(c: ContainerResult): string {
  const parts = [`${c.container}`, c.state, c.changed ? 'changed' : 'unchanged']
  if (c.pid !== undefined) parts.push(`pid ${c.pid}`)
  let line = terminalText(parts.join('  '))
  if (c.error) line += `\n    ${terminalLines(`${c.error.code}: ${c.error.message}`).join('\n    ')}`
  return line
}

/** `svc compose down|restart`: one line per container, then the outcome. */
export function formatOpResult(verb: string, op: OpResult): string {
  const lines = op.containers.map(containerLine)
  lines.push(terminalText(op.status === 'ok' ? `${verb}: ok (${op.operation_id})` : `${verb}: failed (${op.operation_id})`))
  return `${lines.join('\n')}\n`
}

/** `svc compose remove`. */
export function formatRemove(result: RemoveResult): string {
  const head = result.changed ? `Removed ${result.container} from the compose file` : `${result.container}: nothing to remove`
  return `${terminalText(head)}\n${formatOpResult('down', result.down)}`
}
