/**
 * Process plumbing of the supervisor (cli.md §5.1): commands through the platform shell (or, for
 * one simple command, split as the shell would and started without it), each in its own process
 * group, signalled as a group, and waited for until every member is gone.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readdirSync, readFileSync, realpathSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { processAlive } from '../lib/processes.ts'

const WINDOWS = process.platform === 'win32'

/** How a command ended. */
export interface CommandExit {
  /** Exit code; null when killed by a signal or never started. */
  code: number | null
  signal: NodeJS.Signals | null
  /** Set when the shell could not be started at all (e.g. the directory vanished). */
  spawnError?: string
}

/** A command started by {@link runShell}. */
export interface ShellProcess {
  readonly pid: number | undefined
  /** `Date.now()` just before the spawn. */
  readonly startedAtMs: number
  /** Resolves when the shell (the group leader) has exited; never rejects. */
  readonly done: Promise<CommandExit>
  /** True once `done` has resolved. */
  exited: boolean
  /** True when svc asked it to stop (so the exit is not a crash). */
  requested: boolean
  /**
   * Resolves once both output pipes have ended and every line went to `onLine`; never rejects.
   * It may lag `done` (the pipes still hold lines) or never come (a grandchild keeps them open),
   * so wait on it with a bound.
   */
  readonly drained: Promise<void>
  /**
   * How to stop it when it is no process group of this host (a process inside a microVM, cli.md
   * §5.7): asked by {@link stopGroup} instead of signals. Resolves true when it had to be killed.
   */
  stop?: (timeoutMs: number) => Promise<boolean>
}

/** Every group started and not yet seen gone, killed if svc itself exits without stopping them. */
const liveGroups = new Set<number>()
let exitHookInstalled = false

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // A svc that exits abruptly (second Ctrl-C, uncaught error) must not leave workers behind: they
  // run in their own process groups, so nothing else would signal them.
  process.on('exit', () => {
    for (const pgid of liveGroups) signalGroup(pgid, 'SIGKILL')
  })
}

/** One word of a {@link isSimpleCommand}: safe characters, `'…'`, or `"…"` holding safe characters and `${NAME}`/`${NAME:-word}`. */
// One character or one quoted string per repetition: a nested `+` here backtracks exponentially on a
// long word that fails to match (a start command is the user's, but svc must not hang on it).
const SIMPLE_WORD = String.raw`(?:[A-Za-z0-9_./:@%+=,-]|'[^']*'|"(?:[A-Za-z0-9_./:@%+=, -]|\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[A-Za-z0-9_./:@%+=,-]*)?\})*")+`
const SIMPLE_COMMAND = new RegExp(String.raw`^[ 	]*${SIMPLE_WORD}(?:[ 	]+${SIMPLE_WORD})*[ 	]*$`)

/**
 * True when `command` is one simple command the shell can `exec`: words of safe characters, quoted
 * strings and `${NAME:-default}` expansions only (no operators, redirections, globs, `$(…)` or
 * backquotes), and a first word that is no variable assignment (`A=1 node x`). Such a command runs
 * as `exec <command>` (cli.md §5.1 still holds: the shell parses it), so the process svc supervises
 * is the worker itself (`.venv/bin/python main.py`, a Rust binary), with no shell in between.
 */
export function isSimpleCommand(command: string): boolean {
  if (command.length > 4096 || !SIMPLE_COMMAND.test(command)) return false
  const first = command.trimStart()
  return !/^[A-Za-z_][A-Za-z0-9_]*=/.test(first)
}

/**
 * The words `sh -c` makes of a {@link isSimpleCommand}, expanded with `env`: quotes removed,
 * `${NAME}` the variable's value (empty when unset) and `${NAME:-word}` the value, or `word` when
 * it is unset or empty — what POSIX `sh` does with these forms (no field splitting or globbing
 * happens: expansions only appear inside double quotes). Undefined for any other command.
 *
 * @example commandWords('node "${ENTRY:-src/index.ts}" --x \'a b\'', {}) // ['node', 'src/index.ts', '--x', 'a b']
 */
export function commandWords(command: string, env: Readonly<Record<string, string | undefined>>): string[] | undefined {
  if (!isSimpleCommand(command)) return undefined
  const words: string[] = []
  // One unquoted run, one '…' or one "…" per match; whitespace between words.
  const part = /[ \t]+|'([^']*)'|"((?:[^"$]|\$\{[^}]*\})*)"|([^ \t'"]+)/g
  let word: string | undefined
  for (const match of command.matchAll(part)) {
    if (match[0].trim() === '') {
      if (word !== undefined) words.push(word)
      word = undefined
      continue
    }
    const text = match[1] ?? match[3] ?? (match[2] ?? '').replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => {
      const value = Object.hasOwn(env, name) ? env[name] : undefined
      return fallback !== undefined && (value === undefined || value === '') ? fallback : (value ?? '')
    })
    word = (word ?? '') + text
  }
  if (word !== undefined) words.push(word)
  return words
}

/**
 * Runs `command` through the platform shell (`sh -c` on POSIX, `cmd.exe /d /s /c` on Windows) in
 * `cwd` with exactly `env`, as the leader of a new process group (POSIX), stdin closed. Every
 * stdout/stderr line goes to `onLine`. With `exec` (POSIX), a {@link isSimpleCommand} runs as the
 * shell would run `exec <command>` (cli.md §5.1), without starting a shell: its words
 * ({@link commandWords}) are executed directly, found on `env.PATH`, with `PWD` set to the
 * directory as `sh` sets it — so `pid` is the command's own process, and a worker's start saves an
 * exec of `/bin/sh` (issue 20 "Engine start"). A command that cannot be executed that way (not
 * found, not executable) goes through the shell after all, which reports it as it always did.
 */
export function runShell(
  command: string,
  options: { cwd: string; env: Record<string, string>; onLine: (stream: 'stdout' | 'stderr', text: string) => void; exec?: boolean },
): ShellProcess {
  installExitHook()
  const startedAtMs = Date.now()
  const spawnOptions = { cwd: options.cwd, detached: !WINDOWS, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'], windowsHide: true }
  let subprocess: ChildProcess | undefined
  const words = options.exec && !WINDOWS ? commandWords(command, options.env) : undefined
  if (words !== undefined && words.length > 0) {
    const direct = spawn(words[0]!, words.slice(1), { ...spawnOptions, env: { ...options.env, PWD: shellPwd(options.cwd, options.env.PWD) } })
    // No pid: it could not be executed (the error event follows); the shell reports that instead.
    if (direct.pid !== undefined) subprocess = direct
    else direct.once('error', () => {})
  }
  subprocess ??= spawn(options.exec && !WINDOWS && isSimpleCommand(command) ? `exec ${command.trim()}` : command, { ...spawnOptions, env: options.env, shell: true })
  const child = subprocess
  const pid = child.pid
  if (pid !== undefined && !WINDOWS) liveGroups.add(pid)
  const closed: Array<Promise<void>> = []
  for (const stream of ['stdout', 'stderr'] as const) {
    const source = child[stream]
    if (!source) continue
    const lines = createInterface({ input: source, crlfDelay: Infinity })
    lines.on('line', (text) => options.onLine(stream, text))
    closed.push(new Promise((resolve) => lines.once('close', () => resolve())))
    // A stream error (EPIPE after the group was killed) ends the output, not the supervisor.
    source.on('error', () => {})
  }
  const proc: ShellProcess = {
    pid,
    startedAtMs,
    exited: false,
    requested: false,
    drained: Promise.all(closed).then(() => {}),
    done: new Promise<CommandExit>((resolve) => {
      let settled = false
      const finish = (exit: CommandExit) => {
        if (settled) return
        settled = true
        proc.exited = true
        // Forget a group that ended with its leader, so the exit hook never signals a reused id.
        if (pid !== undefined && !WINDOWS) groupAlive(pid)
        resolve(exit)
      }
      // 'exit' fires when the leader exits, even while a grandchild still holds the pipes open.
      child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => finish({ code, signal }))
      // Never started (the shell itself, or the directory, is missing); a later error (a failed
      // kill) does not end it.
      child.once('error', (err: Error) => {
        if (pid === undefined) finish({ code: null, signal: null, spawnError: err.message })
      })
    }),
  }
  return proc
}

/**
 * `PWD` as `sh` sets it in the environment of what it execs from `cwd`: the inherited value when
 * it names that directory, else the directory's physical path.
 */
function shellPwd(cwd: string, inherited: string | undefined): string {
  try {
    const physical = realpathSync(cwd)
    if (inherited !== undefined && inherited.startsWith('/') && realpathSync(inherited) === physical) return inherited
    return physical
  } catch {
    return cwd
  }
}

/**
 * True for a pid a signal may be sent to as one process or one process group: a safe integer above
 * 1. Signalling the group of 0 reaches svc's own group, -1 (the group "of 1") every process the user
 * may signal; a pid read from a record (a compose daemon's state.json) must never become either.
 *
 * @example isSignalTarget(4242) // true
 * @example isSignalTarget(1) // false: signalling its group is kill(-1), every process
 */
export function isSignalTarget(pid: unknown): pid is number {
  return typeof pid === 'number' && Number.isSafeInteger(pid) && pid > 1
}

/**
 * Sends `signal` to the process group led by `pgid` (Windows: the process tree). False when it is
 * gone, and for a `pgid` that is no {@link isSignalTarget} (nothing is sent).
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (!isSignalTarget(pgid)) return false
  if (WINDOWS) {
    if (signal === 'SIGKILL' || signal === 'SIGTERM') {
      spawn('taskkill', ['/pid', String(pgid), '/T', '/F'], { stdio: 'ignore', windowsHide: true }).on('error', () => {})
    }
    return true
  }
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false
  }
}

/**
 * True while a process of group `pgid` is alive. On Linux the process table is read so that
 * zombies (members whose parent died and that no init reaps, as in some containers) do not count.
 */
export function groupAlive(pgid: number): boolean {
  if (!isSignalTarget(pgid)) return false
  if (WINDOWS) return processAlive(pgid)
  try {
    process.kill(-pgid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') {
      liveGroups.delete(pgid)
      return false
    }
  }
  if (process.platform !== 'linux') return true
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return true
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue
    }
    // Fields after the command name (which may contain spaces and parentheses): state ppid pgrp …
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true
  }
  liveGroups.delete(pgid)
  return false
}

/** Polls `check` every `intervalMs` until it is true (resolves true) or `timeoutMs` passes (false). */
export async function waitFor(check: () => boolean, timeoutMs: number, intervalMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (check()) return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/**
 * Stops a command's whole process group: SIGTERM, then SIGKILL when the leader or any member is
 * still alive after `timeoutMs`. Resolves once the group is gone (or 2 s after the SIGKILL, for
 * processes the kernel will not let go of). Returns true when SIGKILL was needed.
 */
export async function stopGroup(proc: ShellProcess, timeoutMs: number): Promise<boolean> {
  proc.requested = true
  if (proc.stop) return proc.stop(timeoutMs)
  const pid = proc.pid
  if (pid === undefined) {
    await proc.done
    return false
  }
  const gone = () => proc.exited && !groupAlive(pid)
  if (gone()) return false
  signalGroup(pid, 'SIGTERM')
  if (await waitFor(gone, timeoutMs)) return false
  signalGroup(pid, 'SIGKILL')
  await waitFor(gone, 2000)
  return true
}

/**
 * Stops the process group led by `pid`, a process this svc did not start (a container a previous
 * compose daemon started and this one re-adopted, cli.md §4.7): SIGTERM to the group (to the
 * process alone when it leads none), then SIGKILL when it or a member is still alive after
 * `timeoutMs` (ms). Resolves once they are gone, or 2 s after the SIGKILL. True when SIGKILL was needed.
 * A `pid` that is no {@link isSignalTarget} (0, 1, negative, not an integer) is never signalled.
 *
 * @example await stopPid(record.pid, 10_000) // true when it took SIGKILL
 */
export async function stopPid(pid: number, timeoutMs: number): Promise<boolean> {
  if (!isSignalTarget(pid)) return false
  const signal = (name: NodeJS.Signals) => {
    if (signalGroup(pid, name)) return
    try {
      process.kill(pid, name)
    } catch {
      /* already gone */
    }
  }
  const gone = () => !processAlive(pid) && !groupAlive(pid)
  if (gone()) return false
  signal('SIGTERM')
  if (await waitFor(gone, timeoutMs)) return false
  signal('SIGKILL')
  await waitFor(gone, 2000)
  return true
}

/** Describes an exit for messages: `exited with code 1`, `was killed by SIGKILL`, `could not be started (…)`. */
export function describeExit(exit: CommandExit): string {
  if (exit.spawnError !== undefined) return `could not be started (${exit.spawnError})`
  if (exit.signal) return `was killed by ${exit.signal}`
  return `exited with code ${exit.code}`
}
