/**
 * Starts the example in one command: the svc engine (with this folder's config.yaml) and the
 * link-shortener worker, as two processes. Ctrl-C stops both.
 * (Until `svc` launches `worker_path` workers itself, this script plays that part.)
 */
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const svc = join(here, '..', '..', 'bin', 'run.js')

const engine = spawn(process.execPath, [svc, '--config', join(here, 'config.yaml')], { stdio: 'inherit' })
const worker = spawn(process.execPath, [join(here, 'src', 'worker.js')], { stdio: 'inherit', cwd: here })

let stopping = false
const stop = (signal) => {
  if (stopping) return
  stopping = true
  worker.kill(signal)
  engine.kill(signal)
}
process.on('SIGINT', () => stop('SIGINT'))
process.on('SIGTERM', () => stop('SIGTERM'))
engine.on('exit', (code) => {
  stop('SIGTERM')
  process.exitCode = code ?? 0
})
worker.on('exit', (code) => {
  if (!stopping) console.error(`link-shortener worker exited with code ${code}`)
})
