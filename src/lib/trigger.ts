/**
 * One invocation from the command line (cli.md §4.6, Execution): connect as a short-lived worker
 * named `svc-cli:trigger`, invoke, disconnect, and map every outcome to output and exit code.
 */
import { arch, platform, release } from 'node:os'
// The client core and its ws transport, not svc-sdk: svc-sdk loads the OpenTelemetry SDK (0.3 s of
// every command's start) for telemetry a one-shot CLI call turns off (issue 20).
import { ClientSession, InvocationError, TriggerAction, type SvcClient, type TriggerRequest } from 'svc-protocol/client'
import { connectWebSocket } from 'svc-protocol/transport/ws'
import type { FunctionSummary, WorkerSummary } from 'svc-protocol'
import { closestMatch, terminalText } from '../../runtime/index.ts'
import { Codes, Errors, SvcError } from 'svc-protocol/errors'
import { CliCodes, CliError, ExitCode, exitCodeForCode, hintFor } from './errors.ts'
import { addressList, oneAddress, shownAddress, shownAddresses } from './engine-addresses.ts'
import { interruptible } from './interactive.ts'

/** Worker name the CLI announces while it triggers. */
export const TRIGGER_WORKER_NAME = 'svc-cli:trigger'

/** Hint printed with `function_not_found` (cli.md §4.6 outcome table), from the CLI's catalogue hints. */
export const NOT_FOUND_HINT = hintFor(Codes.FunctionNotFound)!

export interface TriggerCall {
  /** `ws://…` of the engine, or several separated by commas (`SVC_URL`'s form): the first that answers is used. */
  url: string
  functionId: string
  payload: unknown
  /** `-n`; undefined sends no namespace (the engine uses `default`). */
  namespace?: string | undefined
  /** `sync` waits for the result, `void` returns once sent, `enqueue` returns the receipt. */
  mode: 'sync' | 'void' | 'enqueue'
  /** Queue name for `enqueue`. */
  queue?: string | undefined
  /** `enqueue` only: `delay_ms` of the Enqueue action (builtins.md §7.4), ms. */
  delayMs?: number | undefined
  /** `enqueue` only: `idempotency_key` of the Enqueue action (builtins.md §7.4). */
  idempotencyKey?: string | undefined
  /** Timeout of a sync or enqueue call, ms (default 30000 in the command). */
  timeoutMs: number
  /** Local workers config.yaml declares (enabled), to tell a worker still starting from a typo. */
  declaredWorkers?: readonly string[] | undefined
  /** The `Hint:` of an unreachable engine, when the command knows better than the catalogue (`unreachableHint` of project.ts). */
  unreachableHint?: string | undefined
  /**
   * Cancels the call when it aborts (Ctrl-C): the engine is sent `cancelinvocation` and the call
   * fails with `cancelled`, exit 130 ({@link ExitCode.Interrupted}).
   */
  signal?: AbortSignal | undefined
}

/** How long a cancelled `svc trigger` waits for its connection to close after the cancel went out, ms. */
export const CANCEL_CLOSE_BOUND_MS = 1000

export interface TriggerOutcome {
  /** The function's result; undefined when it returned none (or for `void`). */
  result: unknown
  durationMs: number
}

/**
 * `Cannot connect to the engine at <url> (<reason>). Is svc running?` (exit 3), code
 * `ENGINE_UNREACHABLE`, with `hint` (the project's, see `unreachableHint` of project.ts) or else
 * the catalogue's hint for the code. `url` is shown without credentials (`shownAddresses`; a
 * comma-separated list as its addresses).
 */
export function unreachableError(url: string, cause: unknown, hint: string | undefined = hintFor(Codes.EngineUnreachable)): CliError {
  const reason = reasonOf(cause)
  const init: ConstructorParameters<typeof CliError>[0] = {
    code: CliCodes.EngineUnreachable,
    message: `Cannot connect to the engine at ${shownAddresses(url)}${reason ? ` (${reason})` : ''}. Is svc running?`,
    exitCode: exitCodeForCode(Codes.EngineUnreachable),
    cause,
  }
  if (hint !== undefined) init.hint = hint
  return new CliError(init)
}

/** One address {@link connectFirst} tried without an engine answering, and why (undefined: unknown). */
export interface FailedAttempt {
  address: string
  cause: unknown
}

/**
 * {@link unreachableError} after every address of a list failed (issue 19 §3): one attempt reads
 * as before; several give `Cannot connect to the engine at any of <n> addresses: <address>
 * (<reason>), …. Is svc running?`, each address without credentials, the causes together as an
 * `AggregateError`.
 */
export function unreachableAtAll(attempts: readonly FailedAttempt[], hint: string | undefined = hintFor(Codes.EngineUnreachable)): CliError {
  if (attempts.length === 1) return unreachableError(attempts[0]!.address, attempts[0]!.cause, hint)
  const tried = attempts.map(({ address, cause }) => {
    const reason = reasonOf(cause)
    return `${shownAddress(address)}${reason ? ` (${reason})` : ''}`
  })
  const init: ConstructorParameters<typeof CliError>[0] = {
    code: CliCodes.EngineUnreachable,
    message: `Cannot connect to the engine at any of ${attempts.length} addresses: ${tried.join(', ')}. Is svc running?`,
    exitCode: exitCodeForCode(Codes.EngineUnreachable),
    cause: new AggregateError(attempts.map((a) => a.cause), 'no engine address answered'),
  }
  if (hint !== undefined) init.hint = hint
  return new CliError(init)
}

function reasonOf(cause: unknown): string | undefined {
  if (!(cause instanceof Error)) return undefined
  const code = (cause as { code?: unknown }).code
  if (typeof code === 'string' && code !== Codes.NotConnected) return code
  const inner = (cause as { errors?: unknown[] }).errors?.[0]
  if (inner) return reasonOf(inner)
  return cause.message || undefined
}

/**
 * Registers a short-lived worker for a CLI command (cli.md §4.6): no reconnection, no telemetry
 * (no /otel socket, no spans), announced as a Node worker of the CLI's version.
 *
 * `url` is one address; a list goes through {@link connectFirst}.
 *
 * @throws {CliError} `INVALID_ARGUMENT` (exit 2) for a URL that is not `ws:`/`wss:` (named without
 *   its credentials)
 */
export function registerCliWorker(url: string, workerName: string, workerDescription: string): SvcClient {
  return new ClientSession({
    address: oneAddress(url),
    connector: connectWebSocket,
    announce: {
      runtime: 'node',
      name: workerName,
      description: workerDescription,
      os: `${platform()} ${release()} (${arch()})`,
      pid: process.pid,
      isolation: null,
      telemetry: { language: 'typescript', framework: 'svc-cli' },
    },
    reconnection: { maxRetries: 0 },
  })
}

/**
 * Connects a short-lived CLI worker ({@link registerCliWorker}) to the first engine of `url` that
 * answers (issue 19 §3): the addresses of a comma-separated list are tried one after another, in
 * order; an attempt that fails — refused, reset, no opening handshake within the client's deadline
 * (10 s), closed before it opened, or no `connected` within `timeoutMs` when given — moves on to
 * the next. Resolves the connected client, or every failed attempt in order.
 *
 * @throws {CliError} `INVALID_ARGUMENT` (exit 2) for an address text that is not a list of
 *   `ws:`/`wss:` URLs (see `addressList`)
 */
export async function connectFirst(
  url: string,
  workerName: string,
  workerDescription: string,
  timeoutMs?: number,
): Promise<{ client: SvcClient; failed?: undefined } | { client?: undefined; failed: FailedAttempt[] }> {
  const addresses = addressList(url)
  const failed: FailedAttempt[] = []
  for (const address of addresses) {
    const client = registerCliWorker(address, workerName, workerDescription)
    const outcome = await opened(client, timeoutMs)
    if (outcome.connected) return { client }
    failed.push({ address, cause: outcome.cause })
    await client.shutdown().catch(() => undefined)
  }
  return { failed }
}

/** Waits for `client`'s first `connected`, or for its attempt to end (`failed`, `disconnected`, `timeoutMs`). */
function opened(client: SvcClient, timeoutMs: number | undefined): Promise<{ connected: true } | { connected: false; cause: unknown }> {
  return new Promise((resolve) => {
    let done = false
    let timer: ReturnType<typeof setTimeout> | undefined
    let remove: (() => void) | undefined
    const finish = (outcome: { connected: true } | { connected: false; cause: unknown }): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      // The listener may run inside addConnectionStateListener, before `remove` is assigned.
      queueMicrotask(() => remove?.())
      resolve(outcome)
    }
    remove = client.addConnectionStateListener((state) => {
      if (state === 'connected') finish({ connected: true })
      else if (state === 'failed' || state === 'disconnected') finish({ connected: false, cause: client.getLastError() })
    })
    if (!done && timeoutMs !== undefined) {
      timer = setTimeout(() => finish({ connected: false, cause: client.getLastError() ?? new SvcError(Codes.Timeout, `no answer within ${timeoutMs}ms`) }), timeoutMs)
    }
  })
}

/**
 * {@link connectFirst} for `svc trigger` and the commands built on it.
 *
 * @throws {CliError} `ENGINE_UNREACHABLE` (exit 3) naming every address tried
 *   ({@link unreachableAtAll}), `INVALID_ARGUMENT` (exit 2) for an invalid address text
 */
export async function connect(url: string, unreachableHint?: string): Promise<SvcClient> {
  const outcome = await connectFirst(url, TRIGGER_WORKER_NAME, 'svc trigger (command line)')
  if (outcome.failed !== undefined) throw unreachableAtAll(outcome.failed, unreachableHint)
  return outcome.client
}

/**
 * Runs one invocation and disconnects.
 *
 * @throws {CliError} exit 3 when the engine is unreachable, exit 4 `Timed out after <ms> ms waiting
 *   for <id>`, exit 1 `<code>: <message>` (stack trace as details) for a function error, with the
 *   retry hint for `function_not_found`
 */
export async function triggerOnce(call: TriggerCall): Promise<TriggerOutcome> {
  const client = await connect(call.url, call.unreachableHint)
  const started = performance.now()
  try {
    const request: TriggerRequest = { function_id: call.functionId, payload: call.payload, timeoutMs: call.timeoutMs }
    if (call.signal !== undefined) request.signal = call.signal
    if (call.namespace !== undefined) request.namespace = call.namespace
    if (call.mode === 'void') request.action = TriggerAction.Void()
    else if (call.mode === 'enqueue') request.action = TriggerAction.Enqueue({
        queue: call.queue ?? '',
        ...(call.delayMs !== undefined ? { delayMs: call.delayMs } : {}),
        ...(call.idempotencyKey !== undefined ? { idempotencyKey: call.idempotencyKey } : {}),
      })
    let result: unknown
    try {
      result = await client.trigger(request as TriggerRequest & { action?: undefined })
    } catch (err) {
      if (call.signal?.aborted === true && err instanceof InvocationError && err.code === Codes.Cancelled) {
        // The cancel is on its way; the close that follows waits for it to leave, briefly.
        await Promise.race([client.shutdown(), new Promise((resolve) => setTimeout(resolve, CANCEL_CLOSE_BOUND_MS).unref())])
        throw new CliError({
          code: Codes.Cancelled,
          message: `Cancelled ${call.functionId}: the engine was told to stop it (its handler's signal aborts)`,
          exitCode: ExitCode.Interrupted,
          cause: err,
        })
      }
      // A lost connection names the engine the call went to, not the whole list.
      const failure = invocationFailure(err, { ...call, url: client.getAddress() })
      if (failure.code === Codes.FunctionNotFound) throw await withNotFoundHint(failure, client, call)
      throw failure
    }
    return { result, durationMs: Math.round(performance.now() - started) }
  } finally {
    await client.shutdown()
  }
}

/**
 * Maps a rejected trigger to the outcome table of cli.md §4.6. The exit code of a failure the SDK
 * raised for this call comes from the catalogue: its own deadline (`TIMEOUT`, exactly
 * `invocation timed out after <timeoutMs>ms`) exits 4, `NOT_CONNECTED` exits 3. Every error the
 * invocation returned is a function error (exit 1) whatever its code — a `TIMEOUT` a function reports
 * about its own downstream call included — with the catalogue hint for its code, if any.
 */
export function invocationFailure(err: unknown, call: Pick<TriggerCall, 'functionId' | 'timeoutMs' | 'url' | 'unreachableHint'>): CliError {
  if (!(err instanceof InvocationError)) {
    return new CliError({ code: Codes.InternalError, message: (err as Error).message ?? String(err), exitCode: ExitCode.Failure, cause: err })
  }
  if (err.code === Codes.Timeout && err.detail === Errors.timeout(call.timeoutMs).message) {
    return new CliError({
      code: Codes.Timeout,
      message: `Timed out after ${call.timeoutMs} ms waiting for ${call.functionId}`,
      exitCode: exitCodeForCode(Codes.Timeout),
      cause: err,
    })
  }
  if (err.code === Codes.NotConnected) return unreachableError(call.url, err, call.unreachableHint)
  const init: ConstructorParameters<typeof CliError>[0] = {
    code: err.code,
    message: `${err.code}: ${err.detail}`,
    exitCode: ExitCode.Failure,
    cause: err,
  }
  // The function's stack (often ending in the SDK's socket code) only with --debug (issue 11).
  if (err.stacktrace) init.debugDetails = err.stacktrace
  const hint = hintFor(err.code)
  if (hint !== undefined) init.hint = hint
  return new CliError(init)
}

/** What the engine has, to explain a `function_not_found` (issue 11). */
export interface NotFoundContext {
  functionId: string
  /** `-n`; undefined is `default`. */
  namespace: string | undefined
  /** `engine::functions::list` (every namespace). */
  functions: readonly Pick<FunctionSummary, 'function_id' | 'namespace'>[]
  /** Names and namespaces of the connected workers (`engine::workers::list`). */
  workers: readonly { name: string | null; namespace: string }[]
  /** Local workers config.yaml declares. */
  declaredWorkers: readonly string[]
  /**
   * What svc's supervisor last recorded of declared workers (`.svc/state/workers/<name>.json` of
   * the project whose engine answered), by name; a worker without a current record is absent.
   */
  workerStates?: ReadonlyMap<string, DeclaredWorkerState>
}

/** A declared worker's supervisor state, as the not-found hint uses it. */
export interface DeclaredWorkerState {
  /** `crashed`, `failed`, `stopped`, `starting`… (cli.md §4.5). */
  state?: string
  /** Why it crashed, failed or last exited: `exited with code 1 before it registered: SyntaxError: … (src/index.ts:3)`. */
  lastError?: string
}

/** Longest last error a hint quotes (a summary line is at most 200 characters, plus what precedes it). */
const HINT_ERROR_CHARS = 300

/**
 * The hint for `function_not_found` that fits the cause (issue 11): a declared local worker that is
 * not connected and that svc's supervisor recorded `crashed`, `failed` or `stopped` → say so, with
 * its last error (issue 21); a close id → `did you mean`; a `compose::` id in a namespace no compose
 * daemon serves → say so; a namespace nothing is connected in → say so; a declared local worker not
 * connected yet → it may still be starting; otherwise no worker registered that id.
 */
export function notFoundHint(context: NotFoundContext): string {
  const namespace = context.namespace ?? 'default'
  const notConnected = context.declaredWorkers.filter((name) => !context.workers.some((w) => w.name === name))
  const down = notConnected.filter((name) => ['crashed', 'failed', 'stopped'].includes(context.workerStates?.get(name)?.state ?? ''))
  if (down.length > 0) {
    const what = down.map((name) => {
      const { state, lastError } = context.workerStates!.get(name)!
      const error = lastError === undefined ? '' : lastError.length > HINT_ERROR_CHARS ? ` (${lastError.slice(0, HINT_ERROR_CHARS - 1)}…)` : ` (${lastError})`
      return `${name} ${state}${error}`
    })
    const next = down.some((name) => context.workerStates!.get(name)!.state !== 'stopped') ? 'fix it and save, svc starts it again on the next change' : 'a change to its files starts it again'
    return `${what.join('; ')}; ${next} (svc logs ${down[0]} shows its output)`
  }
  // The engine falls back to `default` for ids a namespace does not have.
  const reachable = context.functions.filter((f) => f.namespace === namespace || f.namespace === 'default').map((f) => f.function_id)
  const close = closestMatch(context.functionId, reachable)
  const flag = namespace === 'default' ? '' : ` -n ${namespace}`
  if (close !== undefined) return `did you mean ${close}? (svc trigger${flag} ${close})`
  const connected = context.workers.filter((w) => w.namespace === namespace)
  if (context.functionId.startsWith('compose::') && !connected.some((w) => w.name === 'compose')) {
    return `no compose daemon serves namespace ${namespace}; start one with svc compose -n ${namespace}`
  }
  if (namespace !== 'default' && connected.length === 0) {
    return `no worker is connected in namespace ${namespace}; check the namespace (-n) or start its workers`
  }
  const waiting = context.declaredWorkers.filter((name) => !context.workers.some((w) => w.name === name))
  if (waiting.length > 0) return `${waiting.join(', ')} ${waiting.length === 1 ? 'is' : 'are'} not connected yet and may still be installing or starting; check svc worker list and retry`
  return `no connected worker registers ${context.functionId}; svc worker list shows the workers and their functions`
}

/** Replaces the generic hint of a `function_not_found` with {@link notFoundHint}; keeps it if the engine cannot be asked. */
async function withNotFoundHint(failure: CliError, client: SvcClient, call: TriggerCall): Promise<CliError> {
  try {
    const [functions, workers] = await Promise.all([
      client.trigger({ function_id: 'engine::functions::list', payload: {}, timeoutMs: 5000 }) as Promise<{ functions: FunctionSummary[] }>,
      client.trigger({ function_id: 'engine::workers::list', payload: {}, timeoutMs: 5000 }) as Promise<{ workers: WorkerSummary[] }>,
    ])
    const hint = notFoundHint({
      functionId: call.functionId,
      namespace: call.namespace,
      functions: functions.functions ?? [],
      workers: workers.workers ?? [],
      declaredWorkers: call.declaredWorkers ?? [],
      workerStates: await declaredWorkerStates(call),
    })
    const init: ConstructorParameters<typeof CliError>[0] = { code: failure.code, message: failure.message, exitCode: failure.exitCode, hint, cause: failure.cause }
    if (failure.details !== undefined) init.details = failure.details
    if (failure.debugDetails !== undefined) init.debugDetails = failure.debugDetails
    return new CliError(init)
  } catch {
    return failure
  }
}

/**
 * The supervisor's records of `call.declaredWorkers` in the project of the engine at `call.url`
 * (the per-user registry of running engines names its root); records of an svc that is no longer
 * running are left out. Loaded only when a call was not found.
 */
async function declaredWorkerStates(call: TriggerCall): Promise<Map<string, DeclaredWorkerState>> {
  const states = new Map<string, DeclaredWorkerState>()
  const names = call.declaredWorkers ?? []
  if (names.length === 0) return states
  const [{ engineAt }, { readWorkerState }] = await Promise.all([import('./engines.ts'), import('../worker-admin/state-files.ts')])
  const engine = addressList(call.url)
    .map((address) => engineAt(address))
    .find((record) => record !== undefined)
  if (engine === undefined) return states
  for (const name of names) {
    const record = readWorkerState(engine.project_root, name)
    if (record === undefined || record.stale || record.supervisorPid !== engine.pid) continue
    const state: DeclaredWorkerState = {}
    if (record.state !== undefined) state.state = record.state
    if (record.lastError !== undefined) state.lastError = record.lastError
    states.set(name, state)
  }
  return states
}

/**
 * The searchable function list of an interactive `svc trigger` without FUNCTION_ID (cli.md §4.6),
 * built from `engine::functions::list`.
 *
 * @throws {CliError} exit 3 when the engine is unreachable, exit 1 when no function is registered,
 *   exit 130 on Ctrl-C
 */
export async function pickFunction(url: string, namespace: string | undefined, unreachableHint?: string): Promise<string> {
  const client = await connect(url, unreachableHint)
  let functions: FunctionSummary[]
  try {
    const payload = namespace === undefined ? {} : { namespace }
    functions = ((await client.trigger({ function_id: 'engine::functions::list', payload })) as { functions: FunctionSummary[] }).functions
  } finally {
    await client.shutdown()
  }
  if (functions.length === 0) {
    throw new CliError({ code: Codes.FunctionNotFound, message: 'No functions are registered', hint: 'start a worker first (svc, or svc worker add)', exitCode: ExitCode.Failure })
  }
  const { search } = await import('@inquirer/prompts')
  return interruptible(
    search<string>({
      message: 'Function to invoke',
      source: (term) => {
        const needle = (term ?? '').toLowerCase()
        return functions
          .filter((f) => f.function_id.toLowerCase().includes(needle) || (f.description ?? '').toLowerCase().includes(needle))
          // Ids and descriptions are what workers registered: shown escaped (issue 16).
          .map((f) => ({ name: terminalText(f.function_id), value: f.function_id, description: f.description === undefined ? undefined : terminalText(f.description) }))
      },
    }),
  )
}
