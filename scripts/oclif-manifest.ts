/**
 * Writes `oclif.manifest.json` for the svc CLI: every command's id, flags, arguments and compiled
 * path, so that `svc --version`, `svc --help` and each command load only what they use instead of
 * importing every command to list them (issue 20: `svc --version` took 1.8 s, 0.3 s with it).
 *
 * As oclif intends, the manifest is made when packing (`npm run pack:dist`, src/project/bundle.ts)
 * and shipped in the CLI tarball; a checkout has none, so a command edited there is never hidden
 * behind a stale manifest.
 *
 * Usage: `node scripts/oclif-manifest.ts <cli root> <out file>`, after `npm run build` (it reads
 * the compiled commands in `<cli root>/dist/src/commands`).
 */
import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Plugin } from '@oclif/core'

const [root, out] = process.argv.slice(2)
if (root === undefined || out === undefined) {
  console.error('usage: node scripts/oclif-manifest.ts <cli root> <out file>')
  process.exit(2)
}
// ignoreManifest: build it from the commands themselves; errorOnManifestCreate: a command that
// fails to load fails the pack instead of being left out of the manifest.
const plugin = new Plugin({ root: resolve(root), type: 'core', ignoreManifest: true, errorOnManifestCreate: true })
await plugin.load()
writeFileSync(resolve(out), `${JSON.stringify(plugin.manifest, null, 2)}\n`)
console.log(`${Object.keys(plugin.manifest.commands).length} commands in ${out}`)
