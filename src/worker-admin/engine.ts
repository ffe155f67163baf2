/**
 * The worker commands' view of a running engine: a short-lived connection (named
 * `svc-cli:worker`) and the introspection calls they need (protocol.md §11.1).
 */
import type { SvcClient } from 'svc-protocol/client'
import type { FunctionSummary, WorkerSummary } from 'svc-protocol'
import { CliError, ExitCode } from '../lib/errors.ts'
import { connectFirst, unreachableError } from '../lib/trigger.ts'
import { engineNotice } from '../lib/project.ts'
import type { EngineTarget } from '../lib/project.ts'

/** Name under which the worker commands connect; such connections are never listed as workers. */
export const CLI_WORKER_NAME = 'svc-cli:worker'

/** How long to wait for the WebSocket to open before calling the engine not running, ms. */
export const CONNECT_TIMEOUT_MS = 5000

/** How long one introspection call may take, ms. */
const CALL_TIMEOUT_MS = 10000

/** Entries of `engine::workers::list` and `engine::functions::list` (protocol.md §11.1). */
export type EngineWorker = WorkerSummary
export type EngineFunction = FunctionSummary

/** An open connection to the engine; close it when done. */
/** The fields of a stored log record (builtins.md §12) that `svc logs` prints. */
export interface StoredLog {
  timestamp_unix_nano: number
  service_name: string
  severity_text: string
  body: string
}

export class EngineSession {
  readonly url: string
  private readonly client: SvcClient

  private constructor(url: string, client: SvcClient) {
    this.url = url
    this.client = client
  }

  /**
   * Connects without retrying, to the first engine of `url` that answers (one address, or several
   * separated by commas: `connectFirst`, issue 19 §3). Resolves undefined when nothing answers at
   * any (refused, reset, not a svc engine, or no answer within {@link CONNECT_TIMEOUT_MS} each).
   * The session's `url` is the address that answered.
   *
   * @throws {CliError} `INVALID_ARGUMENT` (exit 2) for a URL the SDK rejects
   */
  static async open(url: string, timeoutMs = CONNECT_TIMEOUT_MS): Promise<EngineSession | undefined> {
    const outcome = await connectFirst(url, CLI_WORKER_NAME, 'svc worker (command line)', timeoutMs)
    return outcome.client === undefined ? undefined : new EngineSession(outcome.client.getAddress(), outcome.client)
  }

  /**
   * Workers the engine lists (built-ins and connections), without the CLI's own connections.
   *
   * @throws {CliError} exit 3 when the connection is lost
   */
  async listWorkers(filter: { namespace?: string } = {}): Promise<EngineWorker[]> {
    const result = (await this.call('engine::workers::list', filter)) as { workers?: EngineWorker[] }
    const own = this.client.getWorkerId()
    return (result.workers ?? []).filter((w) => w.id !== own && !(w.name ?? '').startsWith('svc-cli:'))
  }

  /**
   * Functions the engine lists (internal ones hidden), optionally of one worker name.
   *
   * @throws {CliError} exit 3 when the connection is lost
   */
  async listFunctions(filter: { worker?: string; namespace?: string } = {}): Promise<EngineFunction[]> {
    const result = (await this.call('engine::functions::list', filter)) as { functions?: EngineFunction[] }
    return result.functions ?? []
  }

  /**
   * Log records of the observability worker's store, newest first (`engine::logs::list`);
   * undefined when the store is off or the worker is not running.
   *
   * @throws {CliError} exit 3 when the connection is lost
   */
  async listLogs(filter: { service_name?: string; trace_id?: string; start_time?: number; limit?: number }): Promise<StoredLog[] | undefined> {
    try {
      const result = (await this.call('engine::logs::list', filter)) as { logs?: StoredLog[] }
      return result.logs ?? []
    } catch (err) {
      if (err instanceof CliError && err.exitCode === ExitCode.Unreachable) throw err
      return undefined
    }
  }

  /** Closes the connection. Idempotent. */
  async close(): Promise<void> {
    await this.client.shutdown().catch(() => undefined)
  }

  private async call(functionId: string, payload: Record<string, unknown>): Promise<unknown> {
    try {
      return await this.client.trigger({ function_id: functionId, payload, timeoutMs: CALL_TIMEOUT_MS })
    } catch (err) {
      const code = (err as { code?: unknown }).code
      if (code === 'NOT_CONNECTED' || code === 'TIMEOUT') throw unreachableError(this.url, err)
      throw new CliError({ code: typeof code === 'string' ? code : 'internal_error', message: `${functionId} failed: ${(err as Error).message}`, exitCode: ExitCode.Failure, cause: err })
    }
  }
}

/** The engine's start time, ms since the epoch: when its built-in workers attached, else undefined. */
export function engineStartedAtMs(workers: readonly EngineWorker[]): number | undefined {
  const times = workers.filter((w) => w.runtime === 'builtin').map((w) => w.connected_at_ms)
  return times.length === 0 ? undefined : Math.min(...times)
}

/** One connection per command run, opened on first use; `get()` resolves undefined when the engine is not running. */
export class EngineAccess {
  readonly url: string
  /** True when the address holds another project's engine, not this project's (issue 11). */
  readonly foreign: boolean
  private opening: Promise<EngineSession | undefined> | undefined

  /**
   * `target` is a URL, or a resolved {@link EngineTarget}: one found through config.yaml or the
   * default address that another project's engine holds counts as not running, so a project never
   * reads or changes another project's workers.
   */
  constructor(target: string | EngineTarget, options: { announce?: ((text: string) => void) | undefined } = {}) {
    this.url = typeof target === 'string' ? target : target.url
    this.foreign = typeof target !== 'string' && target.foreign !== undefined && (target.source === 'config' || target.source === 'default')
    this.notice = typeof target === 'string' ? undefined : engineNotice(target)
    this.announce = options.announce
  }

  private readonly notice: string | undefined
  private readonly announce: ((text: string) => void) | undefined

  /**
   * Connects on first use; the notice of {@link engineNotice} is announced once, when the engine is
   * first asked for (so usage errors print alone).
   *
   * @throws {CliError} exit 2 for an invalid URL (see {@link EngineSession.open})
   */
  get(): Promise<EngineSession | undefined> {
    if (this.opening === undefined && this.notice !== undefined) this.announce?.(this.notice)
    this.opening ??= this.foreign ? Promise.resolve(undefined) : EngineSession.open(this.url)
    return this.opening
  }

  /** Closes the connection if one was opened. */
  async close(): Promise<void> {
    const session = await this.opening?.catch(() => undefined)
    await session?.close()
  }
}
