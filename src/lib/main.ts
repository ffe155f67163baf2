/**
 * What `bin/run.js` runs once it has a Node new enough (cli.md §1): oclif, with `start` as the
 * default command. The one module that imports oclif, so that in the packed CLI's bundle
 * (scripts/bundle-cli.ts) oclif is bundled once and the commands extend that same copy.
 */
import { execute } from '@oclif/core'
import { withDefaultCommand } from './argv.ts'

/**
 * Runs the svc command line.
 *
 * @param dir `import.meta.url` of `bin/run.js`: oclif finds the CLI's `package.json` from it
 * @param argv the arguments after `svc` (`process.argv.slice(2)`)
 * @throws nothing itself: oclif prints a failure and sets the exit code (`execute`)
 */
export async function main(dir: string, argv: readonly string[]): Promise<void> {
  await execute({ dir, args: withDefaultCommand(argv) })
}
