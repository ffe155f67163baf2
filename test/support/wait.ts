/**
 * The one way tests wait for a condition: poll until it holds, or fail naming what was awaited.
 * Tests wait for conditions, never for fixed times; this is how.
 */

/** What a check may give: a value (done), or `undefined`, `null`, `false` (not yet). */
type Probe<T> = T | undefined | null | false

/**
 * Polls `check` every `intervalMs` until it gives a value other than `undefined`, `null` or
 * `false`, and resolves with it (`true` for a predicate). A check that throws counts as not yet:
 * the last error is named in the failure.
 *
 * @param what what is awaited, for the failure message (`'math-worker running'`), or a function
 *   that describes it when the wait fails (e.g. with the output a process printed so far)
 * @param timeoutMs how long to wait, ms (default 10 000: generous on a loaded 2-core machine)
 * @param intervalMs pause between checks, ms (default 25)
 * @throws {Error} `timed out after <timeoutMs> ms waiting for <what>` (and the check's last error)
 * @example
 * await waitFor(() => events.includes('ready'), 'the ready event')
 * const res = await waitFor(async () => (await fetch(url)).ok || undefined, () => `GET ${url}:\n${output}`, 60_000)
 */
export async function waitFor<T>(check: () => Probe<T> | Promise<Probe<T>>, what: string | (() => string), timeoutMs = 10_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== null && value !== false) return value
      lastError = undefined
    } catch (err) {
      lastError = err
    }
    if (Date.now() >= deadline) {
      const described = typeof what === 'function' ? what() : what
      const cause = lastError === undefined ? '' : `\nlast error: ${lastError instanceof Error ? lastError.message : String(lastError)}`
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}${cause}`, lastError === undefined ? undefined : { cause: lastError })
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/**
 * Waits until the text `read` gives matches `pattern`, and resolves with the match. For the output
 * a process prints, a log a worker writes, a terminal screen. The failure shows the text so far.
 *
 * @param read gives the whole text so far (e.g. `() => output`), read on every check
 * @param pattern what to wait for (a `g`/`y` flag is ignored: every check matches from the start)
 * @param what what is awaited, for the failure message
 * @param options `timeoutMs` (default 30 000: output of a process that starts others), and
 *   `stopIf`: a reason to stop waiting at once (e.g. `() => child.exitCode !== null && 'svc exited'`)
 * @throws {Error} `timed out after <timeoutMs> ms waiting for <what>`, or `gave up waiting for
 *   <what>: <reason>`, each followed by the text so far
 * @example
 * const [, url] = await waitForMatch(() => output, /^ {2}engine {4}(ws:\S+)$/m, 'the banner', { stopIf: () => svc.exitCode !== null && 'svc exited' })
 */
export async function waitForMatch(
  read: () => string,
  pattern: RegExp,
  what: string,
  options: { timeoutMs?: number; stopIf?: () => string | false | undefined | null } = {},
): Promise<RegExpExecArray> {
  const once = new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''))
  const outcome = await waitFor<{ match: RegExpExecArray } | { stopped: string }>(
    () => {
      const match = once.exec(read())
      if (match) return { match }
      const reason = options.stopIf?.()
      return reason ? { stopped: reason } : undefined
    },
    () => `${what}:\n${read()}`,
    options.timeoutMs ?? 30_000,
  )
  if ('stopped' in outcome) throw new Error(`gave up waiting for ${what}: ${outcome.stopped}\n${read()}`)
  return outcome.match
}

/** How many {@link quietPeriod}s this process has waited, by reason: the fixed waits left, countable. */
export const quietPeriods = new Map<string, number>()

/**
 * Waits a fixed time, on purpose and named. Only for a NEGATIVE that no condition can show ("nothing
 * arrives within ms") and that no deterministic barrier can replace (a marker sent after the thing
 * that must not arrive, or a manual clock). Everything else waits with {@link waitFor}.
 *
 * @param ms how long nothing must happen, ms
 * @param why what must not happen in that time (`'no second delivery'`); counted in {@link quietPeriods}
 * @example
 * await quietPeriod(300, 'no redelivery of an acked message')
 * assert.equal(deliveries, 1)
 */
export async function quietPeriod(ms: number, why: string): Promise<void> {
  quietPeriods.set(why, (quietPeriods.get(why) ?? 0) + 1)
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * Resolves on the next turn of the event loop (`setImmediate`), after every promise continuation
 * already queued has run. A deterministic barrier for code that moves on by promises alone: once
 * the last thing that must happen has happened, one turn later anything that would follow it
 * (wrongly) has happened too.
 *
 * @example
 * await waitFor(() => seen.length === 1, 'the first delivery')
 * await nextTurn()
 * assert.deepEqual(seen, [0], 'nothing delivered after unregister')
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
