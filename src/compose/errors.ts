/**
 * Errors of the compose daemon (cli.md §4.7). A {@link ComposeError} thrown by a `compose::*`
 * handler reaches the caller as the invocation error `{code, message}` (the SDK keeps an error's own
 * `code`); the `svc compose` commands turn it into a {@link CliError} with the exit code of §1.1.
 */
import { CliError, ExitCode } from '../lib/errors.ts'
import type { ExitCodeValue } from '../lib/errors.ts'

/** The error codes of cli.md §4.7, plus `INVALID_ARGUMENTS` (builtins.md §2.1) for bad payloads. */
export type ComposeErrorCode =
  | 'NO_COMPOSE_FILE'
  | 'INVALID_COMPOSE_FILE'
  | 'WRONG_DAEMON'
  | 'WRONG_NAMESPACE'
  | 'DAEMON_ALREADY_SERVING'
  | 'UNKNOWN_CONTAINER'
  | 'UNKNOWN_WORKER'
  | 'RESERVED_WORKER'
  | 'NO_START_SCRIPT'
  | 'PRE_RUN_FAILED'
  | 'STARTUP_TIMEOUT'
  | 'CHILD_EXITED_BEFORE_REGISTRATION'
  | 'RESERVED_ENV_OVERRIDE'
  | 'BUILTIN_DISABLED'
  | 'DEPENDENCY_FAILED'
  | 'KVM_NOT_ACCESSIBLE'
  | 'PROJECT_DID_NOT_START'
  | 'INVALID_MANIFEST'
  | 'CONTAINER_CONFLICT'
  | 'START_FAILED'
  | 'DAEMON_STOPPING'
  | 'INVALID_ARGUMENTS'

/** `{code, message}` as it appears in an OpResult container and on the wire. */
export interface ErrorBody {
  code: string
  message: string
}

/**
 * A compose failure with a stable code. File problems carry the place in `message`, compiler style:
 * `worker-compose.yaml:7:5: unknown key 'enviroment' in container 'api' (did you mean 'environment'?)`.
 */
export class ComposeError extends Error {
  override readonly name = 'ComposeError'
  /** A {@link ComposeErrorCode}, or a supervisor failure code passed through (`INSTALL_FAILED`, …). */
  readonly code: ComposeErrorCode | (string & {})

  constructor(code: ComposeErrorCode | (string & {}), message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message }
  }
}

/** Codes that describe a file or argument the user must fix: exit 2 from `svc compose up` (§1.1). */
const USAGE_CODES: ReadonlySet<string> = new Set([
  'NO_COMPOSE_FILE',
  'INVALID_COMPOSE_FILE',
  'WRONG_NAMESPACE',
  'RESERVED_WORKER',
  'RESERVED_ENV_OVERRIDE',
  'INVALID_ARGUMENTS',
  'INVALID_MANIFEST',
])

/** The exit code of cli.md §1.1 for a compose error code. */
export function exitCodeFor(code: string): ExitCodeValue {
  return USAGE_CODES.has(code) ? ExitCode.Usage : ExitCode.Failure
}

/** A {@link ComposeError} (or anything with a string `code`) as a {@link CliError}. */
export function toComposeCliError(err: unknown): CliError {
  if (err instanceof CliError) return err
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : 'internal_error'
  const message = err instanceof Error ? err.message : String(err)
  return new CliError({ code, message, exitCode: exitCodeFor(code), cause: err })
}

/** Any thrown value as `{code, message}`: its own code when it has one, else `fallback`. */
export function errorBody(err: unknown, fallback = 'START_FAILED'): ErrorBody {
  if (err instanceof ComposeError) return err.toBody()
  const own = (err as { code?: unknown })?.code
  const message = err instanceof Error ? err.message : String(err)
  return { code: typeof own === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(own) ? own : fallback, message }
}
