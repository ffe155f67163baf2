/**
 * A steady load of calls for reload tests: `concurrency` loops calling until `stop()`, every answer
 * and every error kept in order. Loops a failed assertion left running are stopped by
 * {@link stopCallLoops} (call it in `after()`).
 */

const running = new Set<{ stop(): Promise<void> }>()

/** A running call loop: its answers and errors (`<code> <message>`) so far, in order. */
export interface CallLoops<T> {
  answers: T[]
  errors: string[]
  stop(): Promise<void>
}

/**
 * Starts `concurrency` loops calling `call` until `stop()`.
 * @example const calls = callLoops(() => client.trigger({ function_id: 'a::b', payload: {} }))
 */
export function callLoops<T>(call: () => Promise<T>, concurrency = 4): CallLoops<T> {
  const answers: T[] = []
  const errors: string[] = []
  let stopping = false
  const loops = Array.from({ length: concurrency }, async () => {
    while (!stopping) {
      try {
        answers.push(await call())
      } catch (err) {
        errors.push(`${(err as { code?: string }).code ?? ''} ${(err as Error).message}`)
      }
    }
  })
  const handle: CallLoops<T> = {
    answers,
    errors,
    async stop() {
      stopping = true
      running.delete(handle)
      await Promise.all(loops)
    },
  }
  running.add(handle)
  return handle
}

/** Stops every loop still running. */
export async function stopCallLoops(): Promise<void> {
  await Promise.all([...running].map((loop) => loop.stop()))
}
