#!/usr/bin/env node
// The svc command (oclif), running the compiled commands in dist/ (in the packed CLI, the bundle of
// scripts/bundle-cli.ts in their place).

// Checked before anything else loads: svc needs Node 22.13 or newer (node:sqlite, require of ES
// modules). Started by an older Node (often the system's, first on PATH), it runs itself again with
// a newer Node found on the machine (bin/find-node.js: SVC_NODE, PATH, nvm, fnm, Volta, n), or says
// what to install.
const [major, minor] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 13)) {
  const { findNode, noNodeMessage } = await import('./find-node.js')
  // SVC_LAUNCHED_BY: set for the Node run here, so a launcher never starts a launcher.
  const found = process.env.SVC_LAUNCHED_BY === undefined ? findNode(process.env) : undefined
  if (found === undefined) {
    process.stderr.write(noNodeMessage(process.version, process.env.SVC_NODE))
    process.exit(1)
  }
  const { spawn } = await import('node:child_process')
  const { fileURLToPath } = await import('node:url')
  const { ENGINE_V8_FLAGS, hostsEngine } = await import('./engine-heap.js')
  const heap = hostsEngine(process.argv.slice(2)) ? ENGINE_V8_FLAGS : []
  const child = spawn(found.path, [...heap, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, SVC_LAUNCHED_BY: process.version },
  })
  // The terminal sends Ctrl-C to both processes; a signal sent to this one alone is passed on.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal))
  child.on('error', (error) => {
    process.stderr.write(`Error: could not run svc with ${found.path}: ${error.message}\n`)
    process.exit(1)
  })
  child.on('exit', (code, signal) => {
    if (signal !== null) {
      process.removeAllListeners(signal)
      process.kill(process.pid, signal)
    } else process.exit(code ?? 1)
  })
} else {
  // An engine-hosting command starts again, in place, with the engine's V8 heap settings
  // (bin/engine-heap.js). process.execve: Node 22.15 / 23.11 and newer, POSIX.
  if (typeof process.execve === 'function') {
    const { ENGINE_V8_FLAGS, heapChosen, hostsEngine } = await import('./engine-heap.js')
    if (hostsEngine(process.argv.slice(2)) && !heapChosen(process.execArgv, process.env.NODE_OPTIONS)) {
      // Built-ins through process.getBuiltinModule, not import(): no ES module face to build.
      const { fileURLToPath } = process.getBuiltinModule('node:url')
      try {
        process.execve(process.execPath, [process.execPath, ...ENGINE_V8_FLAGS, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)])
      } catch {
        // Not replaced (the call is experimental): run on with V8's defaults.
      }
    }
  }
  // Before anything else loads: the compiled code of what follows is reused from the last start
  // (bin/compile-cache.js, issue 20 "Engine start").
  const { enableCompileCache } = await import('./compile-cache.js')
  enableCompileCache(process.getBuiltinModule('node:module'), process.env)
  // Stacks are printed with --debug or DEBUG: then they name src/…/*.ts lines through the source
  // maps (the packed CLI is a bundle); otherwise parsing the maps would only slow every start.
  const { debugEnabled } = await import('../dist/src/lib/argv.js')
  if (debugEnabled(process.env, process.argv.slice(2))) process.setSourceMapsEnabled(true)
  const { main } = await import('../dist/src/lib/main.js')
  await main(import.meta.url, process.argv.slice(2))
}
