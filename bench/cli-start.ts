/**
 * CLI start-up as users get it (issue 20): the packed CLI installed offline into a temporary
 * prefix, then wall time of `svc --version` and of `svc trigger engine::workers::list` against a
 * running engine, each against `node -e "require('ws')"` on the same Node, alternated round by
 * round (the machine is shared; only ratios of one run compare).
 *
 * Packs the CLI (`npm run pack:dist`'s `packDist`) unless `dist/pack` holds tarballs newer than
 * `dist/src`. Prints one JSON line: `{ rounds, ms: { node_ws, version, trigger, version_unlisted,
 * trigger_unlisted } }`, median milliseconds per command; `_unlisted` are the same commands with
 * the installed CLI's `oclif.manifest.json` moved away (as a checkout runs).
 *
 * Usage: `node bench/cli-start.ts [rounds]` (default 15), after `npm run build`.
 */
import { spawn } from 'node:child_process'
import { renameSync } from 'node:fs'
import { join } from 'node:path'
import { startTestEngine } from '../test/support/engine.ts'
import { installPackedCli, median } from './packed-cli.ts'

/**
 * Wall milliseconds of one run of `file args`, which must exit 0. Asynchronous: the engine the
 * trigger calls runs in this process.
 */
function wall(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const start = process.hrtime.bigint()
  const child = spawn(file, args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - start) / 1e6) : reject(new Error(`${file} ${args.join(' ')} exited ${code}: ${stderr}`)))),
  )
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 15)
  const cli = installPackedCli()
  const engine = await startTestEngine({ builtins: [] })
  try {
    const { svc, installed, env: run } = cli
    const ms = { node_ws: [] as number[], version: [] as number[], trigger: [] as number[], version_unlisted: [] as number[], trigger_unlisted: [] as number[] }
    const manifest = join(installed, 'oclif.manifest.json')
    const hidden = `${manifest}.hidden`
    const wsDir = join(installed, 'node_modules', 'ws')
    // One warm-up of each (the file cache), then alternated rounds.
    for (let round = -1; round < rounds; round++) {
      const sample = {
        node_ws: await wall(process.execPath, ['-e', `require(${JSON.stringify(wsDir)})`], run),
        version: await wall(svc, ['--version'], run),
        trigger: await wall(svc, ['trigger', 'engine::workers::list', '--engine', engine.url, '--json'], run),
        // The same without the command manifest, as a checkout runs (oclif then imports every command).
        ...(renameSync(manifest, hidden), {}),
        version_unlisted: await wall(svc, ['--version'], run),
        trigger_unlisted: await wall(svc, ['trigger', 'engine::workers::list', '--engine', engine.url, '--json'], run),
        ...(renameSync(hidden, manifest), {}),
      }
      if (round >= 0) for (const key of Object.keys(ms) as Array<keyof typeof ms>) ms[key].push(sample[key])
    }
    console.log(JSON.stringify({
      rounds,
      ms: Object.fromEntries(Object.entries(ms).map(([key, values]) => [key, median(values)])),
    }))
  } finally {
    await engine.stop()
    cli.remove()
  }
}

await main()
