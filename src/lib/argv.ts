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
  return [...argv]
}
