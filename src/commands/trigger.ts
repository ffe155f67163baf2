/**
 * `svc trigger` (alias `svc t`): invoke a function of a running engine from the command line
 * (cli.md §4.6).
 */
import { Args, Flags } from '@oclif/core'
import { InvocationError } from 'svc-protocol/client'
import { terminalJson, terminalText } from '../../runtime/index.ts'
import { SvcCommand } from '../lib/command.ts'
import { CliError, exitCodeForCode, ExitCode, hintFor, toCliError, usageError } from '../lib/errors.ts'
import { assertFitsMessage, dataLabel, PayloadError, readAll, readDataArgument, resolveTriggerInput } from '../lib/payload.ts'
import { maxMessageBytesAt } from '../lib/engines.ts'
import { engineNotice, projectEngine, unreachableHint } from '../lib/project.ts'
import { pickFunction, triggerOnce } from '../lib/trigger.ts'
import { isInteractiveProcess } from '../lib/interactive.ts'
import { readConfigText, readEntries } from '../worker-admin/config-file.ts'
import { join } from 'node:path'

export default class Trigger extends SvcCommand {
  static override hiddenAliases = ['t']
  static override usage = [
    '<%= command.id %> [FUNCTION_ID] [KEY=VALUE...] [-n <ns>] [-d <json>] [--void | --enqueue <queue> [--delay-ms <ms>] [--idempotency-key <key>]] [--timeout-ms <ms>] [--engine <url>] [--describe] [--json]',
    '<%= command.id %> --function-id=<id> [--payload=<json>] [same flags]',
  ]
  static override summary = 'Invoke a function of the running engine'
  static override description =
    'Builds the payload from --data (any JSON, default {}; @file reads a file, - reads stdin) and KEY=VALUE arguments (the value is JSON when it parses, ' +
    'else text; applied left to right as a shallow merge), invokes FUNCTION_ID once and prints its result as JSON. ' +
    "A payload larger than the engine accepts in one message (its max_message_bytes, 64 MiB by default) is refused before it is sent."

  static override examples = [
    '<%= config.bin %> trigger math::add a=2 b=3',
    `<%= config.bin %> trigger state::get --data '{"scope":"users","key":"ada"}'`,
    '<%= config.bin %> trigger orders::import --data @orders.json',
    'cat orders.json | <%= config.bin %> trigger orders::import --data -',
    '<%= config.bin %> t orders::process id=42 --void',
    '<%= config.bin %> trigger emails::send to=ada@example.com --enqueue emails',
    '<%= config.bin %> trigger billing::charge order=42 --enqueue payments --delay-ms 60000 --idempotency-key order-42',
  ]

  // KEY=VALUE tokens follow FUNCTION_ID in any number.
  static override strict = false

  static override args = {
    function_id: Args.string({ description: 'Function to invoke, e.g. math::add', required: false }),
  }

  static override flags = {
    namespace: Flags.string({ char: 'n', summary: 'Namespace to invoke the function in (default: default)' }),
    data: Flags.string({ char: 'd', summary: 'Payload base as JSON (default {}); @<file> reads a file, - reads standard input' }),
    void: Flags.boolean({ summary: 'Fire and forget: exit once sent, print nothing', exclusive: ['enqueue', 'describe'] }),
    enqueue: Flags.string({ summary: 'Enqueue on this queue and print the receipt', exclusive: ['void', 'describe'] }),
    'delay-ms': Flags.integer({ summary: 'With --enqueue: first delivery not before now + this many ms (at most 7 days)', min: 0, max: 604800000, dependsOn: ['enqueue'] }),
    'idempotency-key': Flags.string({ summary: 'With --enqueue: a repeated key within the window returns the first receipt and stores nothing', dependsOn: ['enqueue'] }),
    'timeout-ms': Flags.integer({ summary: 'How long to wait for the result, ms', default: 30000, min: 1 }),
    engine: Flags.string({ aliases: ['url'], summary: 'Engine URL (default: SVC_URL, else the listener of config.yaml, else ws://127.0.0.1:49134)' }),
    describe: Flags.boolean({ summary: "Print the function's description, schemas and triggers instead of invoking it" }),
    json: Flags.boolean({ summary: 'Print one JSON object: {ok, result | error, duration_ms}' }),
    'function-id': Flags.string({ summary: 'Legacy form of FUNCTION_ID', hidden: true }),
    payload: Flags.string({ summary: 'Legacy form of --data', hidden: true }),
  }

  protected override jsonErrorFields(): Record<string, unknown> {
    return { ok: false }
  }

  async run(): Promise<void> {
    const { flags, argv } = await this.parse(Trigger)
    const target = projectEngine({ flag: flags.engine, cwd: process.cwd() })
    const url = target.url
    // One message to the engine holds at most max_message_bytes (protocol.md §2): a larger payload
    // is refused here, naming its size and the limit, instead of the engine closing the connection.
    const maxMessageBytes = maxMessageBytesAt(url)
    const readStdin = (maxBytes: number) => readAll(process.stdin, maxBytes)
    let input
    try {
      input = resolveTriggerInput({
        positionals: argv as string[],
        data: await readDataArgument(flags.data, '--data', readStdin, process.cwd(), maxMessageBytes),
        functionIdFlag: flags['function-id'],
        payloadFlag: await readDataArgument(flags.payload, '--payload', readStdin, process.cwd(), maxMessageBytes),
        dataLabel: dataLabel('--data', flags.data),
        payloadLabel: dataLabel('--payload', flags.payload),
      })
    } catch (err) {
      if (err instanceof PayloadError) throw payloadCliError(err)
      throw err
    }
    for (const warning of input.warnings) process.stderr.write(`Warning: ${terminalText(warning)}\n`)
    let announced = false
    const announce = () => {
      const notice = engineNotice(target)
      if (notice !== undefined && !flags.json && !announced) process.stderr.write(notice)
      announced = true
    }
    if (input.functionId === undefined) {
      if (!isInteractiveProcess({ json: flags.json })) {
        throw usageError('Missing FUNCTION_ID', 'pass the function to invoke, e.g. svc trigger math::add a=1 b=2')
      }
      announce()
      input.functionId = await pickFunction(url, flags.namespace, unreachableHint(target))
    }
    if (!flags.describe) {
      const from = flags.payload !== undefined ? dataLabel('--payload', flags.payload) : dataLabel('--data', flags.data)
      try {
        assertFitsMessage(input.payload, maxMessageBytes, from.includes(' ') ? `the payload of ${from}` : 'the payload', input.functionId, flags.namespace)
      } catch (err) {
        if (err instanceof PayloadError) throw payloadCliError(err)
        throw err
      }
    }
    const call = flags.describe
      ? {
          url,
          functionId: 'engine::functions::info',
          payload: flags.namespace === undefined ? { function_id: input.functionId } : { function_id: input.functionId, namespace: flags.namespace },
          mode: 'sync' as const,
          timeoutMs: flags['timeout-ms'],
          unreachableHint: unreachableHint(target),
        }
      : {
          url,
          functionId: input.functionId,
          payload: input.payload,
          namespace: flags.namespace,
          mode: flags.void ? ('void' as const) : flags.enqueue !== undefined ? ('enqueue' as const) : ('sync' as const),
          queue: flags.enqueue,
          delayMs: flags['delay-ms'],
          idempotencyKey: flags['idempotency-key'],
          timeoutMs: flags['timeout-ms'],
          declaredWorkers: declaredLocalWorkers(target.project?.root),
          unreachableHint: unreachableHint(target),
        }

    announce()
    const started = performance.now()
    const interrupt = cancelOnInterrupt(input.functionId, flags.json)
    let outcome
    try {
      outcome = await triggerOnce({ ...call, signal: interrupt.signal })
    } catch (err) {
      const error = toCliError(err)
      if (!flags.json) throw error
      process.stdout.write(`${terminalJson({ ok: false, error: jsonError(error), duration_ms: Math.round(performance.now() - started) })}\n`)
      this.exit(error.exitCode)
      return
    } finally {
      interrupt.done()
    }

    // The result is the function's: JSON that a terminal cannot act on (terminalJson, issue 16).
    if (flags.json) {
      process.stdout.write(`${terminalJson({ ok: true, result: outcome.result ?? null, duration_ms: outcome.durationMs })}\n`)
    } else if (outcome.result !== undefined) {
      process.stdout.write(`${terminalJson(outcome.result, 2)}\n`)
    }
  }
}

/**
 * Ctrl-C while `svc trigger` waits (issue 21): the first SIGINT aborts `signal` — the call is
 * cancelled in the engine, which tells the worker running it, and the command exits 130 once its
 * connection closed (at most `CANCEL_CLOSE_BOUND_MS` later) — and says so on stderr; a second
 * SIGINT exits 130 at once. `done()` removes the handler.
 */
function cancelOnInterrupt(functionId: string, json: boolean): { signal: AbortSignal; done(): void } {
  const controller = new AbortController()
  const onSigint = (): void => {
    if (controller.signal.aborted) process.exit(ExitCode.Interrupted)
    if (!json) process.stderr.write(`\nCancelling ${terminalText(functionId)}: sent cancel to the engine (Ctrl-C again to quit at once)\n`)
    controller.abort('svc trigger was interrupted (Ctrl-C)')
  }
  process.on('SIGINT', onSigint)
  return { signal: controller.signal, done: () => process.off('SIGINT', onSigint) }
}

/**
 * A payload that cannot be built (`INVALID_ARGUMENT`) or sent (`MESSAGE_TOO_LARGE`, with the
 * catalogue's hint): exit 2 (cli.md §1.1, a bad argument).
 */
function payloadCliError(err: PayloadError): CliError {
  if (err.code === 'INVALID_ARGUMENT') return usageError(err.message)
  const hint = hintFor(err.code)
  return new CliError({ code: err.code, message: err.message, exitCode: exitCodeForCode(err.code), ...(hint !== undefined ? { hint } : {}) })
}

/** `{code, message, stacktrace?}`: the function's own error as it sent it, else the CLI's. */
function jsonError(error: CliError): Record<string, unknown> {
  const cause = error.cause
  if (error.exitCode === ExitCode.Failure && cause instanceof InvocationError) {
    const body: Record<string, unknown> = { code: cause.code, message: cause.detail }
    if (cause.stacktrace !== undefined) body.stacktrace = cause.stacktrace
    return body
  }
  return { code: error.code, message: error.message }
}

/** Enabled local workers of the project's config.yaml (for the not-found hint); none when unreadable. */
function declaredLocalWorkers(root: string | undefined): string[] {
  if (root === undefined) return []
  try {
    const file = join(root, 'config.yaml')
    return readEntries(readConfigText(file, 'config.yaml'), 'config.yaml')
      .entries.filter((e) => !e.builtin && !e.listener && e.enabled)
      .map((e) => e.name)
  } catch {
    return []
  }
}
