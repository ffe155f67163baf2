/**
 * oclif `command_not_found` hook: `svc triger math::add` names the command it did not find and
 * suggests the closest one (`Hint: did you mean svc trigger math::add?`), exit 2. In an interactive
 * run it hands over to @oclif/plugin-not-found, which asks `Did you mean trigger?` and runs it.
 *
 * The plugin alone is not enough: without a TTY it prints no suggestion, and it measures the
 * distance against the whole argv joined with `:` (`triger:math::add`), not the command words.
 */
import type { Hook } from '@oclif/core'
import notFound from '@oclif/plugin-not-found'
import { closestMatch } from '../../../runtime/index.ts'
import { CliError, ExitCode, formatHumanError } from '../errors.ts'
import { isInteractiveProcess } from '../interactive.ts'

/** What the user typed, split into the words oclif joined into `id` (`triger:math::add` → triger, math::add). */
export function splitUnknownId(id: string, commandIds: readonly string[]): { words: string[]; suggestion: string | undefined; rest: string[] } {
  const segments = id.split(':')
  // The longest prefix of words that is close to a command id of as many words.
  const maxWords = Math.max(1, ...commandIds.map((c) => c.split(':').length))
  for (let n = Math.min(maxWords, segments.length); n >= 1; n--) {
    const typed = segments.slice(0, n).join(':')
    const candidates = commandIds.filter((c) => c.split(':').length === n)
    const match = closestMatch(typed, candidates)
    if (match !== undefined) return { words: segments.slice(0, n), suggestion: match, rest: rejoin(segments.slice(n)) }
  }
  return { words: [segments[0] ?? id], suggestion: undefined, rest: rejoin(segments.slice(1)) }
}

/** Words after the command: a word never starts with an empty segment, so `math::add` stays one word. */
function rejoin(segments: string[]): string[] {
  const words: string[] = []
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!
    if (segment === '' && i + 1 < segments.length && words.length > 0) {
      words[words.length - 1] += `::${segments[++i]}`
    } else words.push(segment)
  }
  return words
}

const hook: Hook<'command_not_found'> = async function (opts) {
  const hidden = new Set(opts.config.commands.filter((c) => c.hidden).map((c) => c.id))
  const ids = [...opts.config.commandIDs, ...opts.config.commands.flatMap((c) => c.aliases)].filter((c) => !hidden.has(c) && c.length > 1)
  const { words, suggestion, rest } = splitUnknownId(opts.id, ids)
  // oclif drops the arguments after an id holding `::` (it slices argv by the id's `:` count), so
  // the words after the command come from the process's own argv when it starts with the same word.
  const original = process.argv.slice(2)
  const argv = original[0] === words[0] ? original.slice(words.length) : [...rest, ...(opts.argv ?? [])]
  if (suggestion !== undefined && isInteractiveProcess({})) {
    return notFound.call(this, { ...opts, id: suggestion === words.join(':') ? opts.id : words.join(':'), argv })
  }
  const typed = words.join(' ')
  const error = new CliError({
    code: 'UNKNOWN_COMMAND',
    message: `'${typed}' is not a ${opts.config.bin} command`,
    exitCode: ExitCode.Usage,
    hint:
      suggestion === undefined
        ? `run ${opts.config.bin} help for the list of commands`
        : `did you mean ${[opts.config.bin, ...suggestion.split(':'), ...argv].join(' ')}? (${opts.config.bin} help lists every command)`,
  })
  process.stderr.write(formatHumanError(error))
  this.exit(error.exitCode)
}

export default hook
