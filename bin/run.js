#!/usr/bin/env node
// The svc command (oclif), running the compiled commands in dist/.
import { execute } from '@oclif/core'
import { withDefaultCommand } from '../dist/src/lib/argv.js'

await execute({ dir: import.meta.url, args: withDefaultCommand(process.argv.slice(2)) })
