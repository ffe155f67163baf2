#!/usr/bin/env node
// Development entry point: runs the TypeScript commands in src/ directly (Node 24 strips the
// types), so edits take effect without `npm run build`.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { execute, settings } from '@oclif/core'
import { withDefaultCommand } from '../src/lib/argv.ts'

// Node runs .ts itself: stop oclif from looking for ts-node or tsx.
settings.enableAutoTranspile = false
const root = fileURLToPath(new URL('..', import.meta.url))
const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
pjson.oclif = { ...pjson.oclif, commands: './src/commands', hooks: { command_not_found: './src/lib/hooks/not-found.ts' } }

await execute({
  development: true,
  dir: import.meta.url,
  args: withDefaultCommand(process.argv.slice(2)),
  loadOptions: { root, pjson },
})
