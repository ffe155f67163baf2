/**
 * Command-line preprocessing done before oclif sees the arguments.
 */

const PASS_THROUGH = new Set(['--version', '-v', '--help', '-h'])

/**
 * Makes `start` the default command (cli.md §1): `svc` alone, or `svc` followed only by flags,
 * runs `svc start`. oclif 4 has no default-command setting, so bin/run.js applies this.
 *
 * @example withDefaultCommand(['--port', '0']) // ['start', '--port', '0']
 */
export function withDefaultCommand(argv: readonly string[]): string[] {
  const first = argv[0]
  if (first === undefined) return ['start']
  if (first.startsWith('-') && !PASS_THROUGH.has(first)) return ['start', ...argv]
  // `svc help` and `svc autocomplete` are oclif plugins' commands, without a --color flag; their
  // output follows --no-color all the same (oclif's renderer reads it from process.argv).
  if (PLUGIN_COMMANDS.has(first)) return argv.filter((arg, i) => !(COLOUR_FLAGS.has(arg) && (argv.indexOf('--') < 0 || i < argv.indexOf('--'))))
  return [...argv]
}

/** Commands of oclif plugins (package.json `oclif.plugins`), not svc's own. */
const PLUGIN_COMMANDS = new Set(['help', 'autocomplete'])

/** Accepted by every svc command (`SvcCommand.baseFlags`), `svc help` included. */
const COLOUR_FLAGS = new Set(['--color', '--no-color'])

/**
 * True when stack traces should be shown: `--debug` among the arguments (before any `--`), or
 * `DEBUG` set to anything but empty, `0` or `false`.
 */
export function debugEnabled(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = process.argv.slice(2)): boolean {
  const end = argv.indexOf('--')
  if ((end < 0 ? argv : argv.slice(0, end)).includes('--debug')) return true
  const value = env.DEBUG
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false'
}
