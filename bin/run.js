#!/usr/bin/env node
// The svc command (oclif), running the compiled commands in dist/.

// Checked before anything else loads: on an older Node, svc would fail later with an obscure
// error (node:sqlite missing, syntax it does not know).
const [major, minor] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 13)) {
  process.stderr.write(
    `Error: svc needs Node.js 22.13 or newer; this is Node ${process.version}.\n` +
      'Hint: install a newer Node, or in a checkout of svc run it through npm (npm run svc -- <args>), ' +
      'which uses the Node 24 that npm install put in node_modules/.bin.\n',
  )
  process.exit(1)
}

const { execute } = await import('@oclif/core')
const { withDefaultCommand } = await import('../dist/src/lib/argv.js')
await execute({ dir: import.meta.url, args: withDefaultCommand(process.argv.slice(2)) })
