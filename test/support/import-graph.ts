/**
 * The relative-import graph of a source folder, and its import circles (strongly connected
 * components with more than one module, or a module importing itself).
 *
 * Imports are read with TypeScript's own pre-processor (`ts.preProcessFile`), so `import type`,
 * `export … from` and dynamic `import()` all count: a type-only circle still ties the modules
 * together for a reader and for the next change that turns a type into a value.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

/** Module (path relative to the root, `/`-separated) → the modules inside the root it imports. */
export type ImportGraph = Map<string, Set<string>>

/**
 * Reads every `.ts` file under `root` (tests excluded: they sit beside the code and import what
 * they test) and keeps the relative imports that stay inside `root`.
 */
export function importGraph(root: string): ImportGraph {
  const absRoot = resolve(root)
  const files = listSources(absRoot)
  const known = new Set(files)
  const graph: ImportGraph = new Map()
  for (const file of files) {
    const edges = new Set<string>()
    const text = readFileSync(file, 'utf8')
    for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
      if (!ref.fileName.startsWith('.')) continue
      const target = resolve(dirname(file), ref.fileName)
      if (known.has(target)) edges.add(name(absRoot, target))
    }
    graph.set(name(absRoot, file), edges)
  }
  return graph
}

/**
 * The import circles of `graph` (Tarjan's strongly connected components), each as its module
 * names sorted, the circles sorted by their first module.
 */
export function importCircles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const onStack = new Set<string>()
  const stack: string[] = []
  const circles: string[][] = []
  let next = 0
  const visit = (node: string): void => {
    index.set(node, next)
    low.set(node, next)
    next++
    stack.push(node)
    onStack.add(node)
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(node, Math.min(low.get(node)!, low.get(to)!))
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    if (component.length > 1 || graph.get(node)?.has(node)) circles.push(component.sort())
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node)
  return circles.sort((a, b) => a[0]!.localeCompare(b[0]!))
}

function listSources(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) out.push(...listSources(path))
    else if (entry.endsWith('.ts') && !entry.endsWith('.test.ts') && !entry.endsWith('.d.ts')) out.push(path)
  }
  return out
}

function name(root: string, file: string): string {
  return relative(root, file).split('\\').join('/')
}
