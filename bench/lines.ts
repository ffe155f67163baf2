/** Reading the JSON lines that benchmark processes print. */

/**
 * The first JSON line of `lines` that has `key`; other lines (logs) are skipped.
 * @throws Error when the lines end first.
 * @example const { port } = await firstJson(lines, 'port')
 */
export async function firstJson(lines: AsyncIterableIterator<string>, key: string): Promise<Record<string, any>> {
  for await (const line of lines) {
    try {
      const value = JSON.parse(line)
      if (key in value) return value
    } catch {
      /* log line */
    }
  }
  throw new Error(`process ended before printing ${key}`)
}
