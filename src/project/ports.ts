/**
 * `svc project init --ports auto` (issue 11): give a new project ports no other project is using,
 * so that several projects run side by side, and write them into its config.yaml.
 */
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { isMap, isSeq, YAMLMap } from 'yaml'
import { CONFIG_FILE_LIMITS, readTextFileSync, YamlSource } from '../../runtime/index.ts'
import { runningEngines } from '../lib/engines.ts'

/** The ports a project listens on. */
export interface ProjectPorts {
  /** The svc-worker-manager listener (default 49134). */
  engine: number
  /** svc-http (default 3111). */
  http: number
  /** svc-stream (default 3112). */
  stream: number
}

/** The defaults of the templates. */
export const DEFAULT_PORTS: ProjectPorts = { engine: 49134, http: 3111, stream: 3112 }

/** Offsets tried: slot k is engine 49134+k, http 3111+10k, stream 3112+10k. */
const SLOTS = 800

/** True when nothing listens on `port` of 127.0.0.1 (bound, then released). */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)))
  })
}

/**
 * A set of ports other than the defaults that is free now and held by no running svc engine.
 * The search starts at a random slot, so that projects created one after the other while none of
 * them runs still get different ports.
 *
 * @throws {Error} when no slot is free
 */
export async function pickFreePorts(random: () => number = Math.random): Promise<ProjectPorts> {
  const held = new Set(runningEngines().flatMap((r) => r.ports))
  const start = 1 + Math.floor(random() * (SLOTS - 1))
  for (let i = 0; i < SLOTS - 1; i++) {
    const k = 1 + ((start - 1 + i) % (SLOTS - 1))
    const ports: ProjectPorts = { engine: DEFAULT_PORTS.engine + k, http: DEFAULT_PORTS.http + 10 * k, stream: DEFAULT_PORTS.stream + 10 * k }
    const all = [ports.engine, ports.http, ports.stream]
    if (all.some((p) => held.has(p))) continue
    if ((await Promise.all(all.map((p) => portFree(p)))).every(Boolean)) return ports
  }
  throw new Error('No free ports found for the project')
}

/**
 * Writes `ports` into config.yaml in place (comments and order kept): `port` of the first
 * svc-worker-manager entry, of svc-http (keeping an `${HTTP_PORT:…}` placeholder's variable) and
 * of svc-stream (an entry is added when there is none).
 *
 * @throws {YamlError} when config.yaml is not YAML svc reads (runtime/yaml: over 1 MiB, too deep, …)
 */
export function applyPorts(configPath: string, ports: ProjectPorts): void {
  const doc = new YamlSource(readTextFileSync(configPath, { file: configPath, maxBytes: CONFIG_FILE_LIMITS.maxBytes }), { file: configPath }).doc
  let workers = doc.get('workers')
  if (!isSeq(workers)) {
    doc.set('workers', doc.createNode([]))
    workers = doc.get('workers')
  }
  if (!isSeq(workers)) return
  const entry = (name: string): YAMLMap | undefined => workers.items.find((item): item is YAMLMap => isMap(item) && item.get('name') === name)
  const setPort = (name: string, aliases: string[], port: number) => {
    let found = entry(name) ?? aliases.map(entry).find((e) => e !== undefined)
    if (found === undefined) {
      found = doc.createNode({ name }) as YAMLMap
      workers.items.push(found)
    }
    let config = found.get('config')
    if (!isMap(config)) {
      found.set('config', doc.createNode({}))
      config = found.get('config')
    }
    if (!isMap(config)) return
    const current = config.get('port')
    // Keep the variable of a `${HTTP_PORT:3111}` placeholder, with the new port as its default.
    const keep = typeof current === 'string' ? /^\$\{([A-Za-z_][A-Za-z0-9_]*):-?/.exec(current)?.[1] : undefined
    config.set('port', keep === undefined ? port : `\${${keep}:${port}}`)
  }
  setPort('svc-worker-manager', [], ports.engine)
  setPort('svc-http', ['http'], ports.http)
  setPort('svc-stream', ['stream'], ports.stream)
  writeFileSync(configPath, doc.toString())
}
