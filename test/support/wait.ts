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
