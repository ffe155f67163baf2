/**
 * Writing a template into the target directory (cli.md §4.1 "copy template", "write
 * .svc/project.ini").
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, posix, relative, sep } from 'node:path'
import { dependencySpecifiers, dependsOnAny, withDependencySpecifiers, withPackageManager } from './dependencies.ts'
import { formatProjectIni, PROJECT_INI, projectIdentity } from './project-ini.ts'
import { substitute, workerNameFor } from './substitute.ts'
import { templateFiles, templateFolderFiles } from './templates.ts'
import type { PackageManager, TemplateInfo } from './types.ts'
import { browserSdkBundle, copyRustSdk, PYTHON_DISTRIBUTIONS, PYTHON_VENDOR_DIRECTORY, pythonWheels, RUST_VENDOR_DIRECTORY, rustSdkDirectory, sdkTarball, VENDOR_DIRECTORY } from './vendor.ts'

export interface CopyTemplateOptions {
  /** Project (or, for the `worker` template, worker) name. */
  name: string
  template: TemplateInfo
  /** Absolute target directory; created when missing. */
  directory: string
  cliRoot: string
  cliVersion: string
  packageManager: PackageManager
  /**
   * Write only the template's `worker` folder into `directory`, and its SDKs into
   * `<projectRoot>/vendor/` (a language template scaffolded inside an existing project).
   */
  workerOf?: { projectRoot: string }
}

/**
 * Copies the template's files into `directory`: placeholders substituted, svc package specifiers
 * set in every package.json, worker manifests set to the package manager. A file already there is
 * replaced, except `.gitignore`, which gets the template's lines it lacks appended. When a
 * package.json depends on svc-sdk and the CLI has its tarball (vendor.ts), the tarball is copied to
 * `vendor/svc-sdk-<v>.tgz` and depended on by a relative `file:` path. A template with
 * `browserSdk` gets the browser SDK bundle copied there.
 *
 * @throws {CliError} `BROWSER_SDK_MISSING` when such a template's bundle is not available (vendor.ts)
 * @returns the paths written, relative to `directory`, `/`-separated, sorted
 */
export function copyTemplate(options: CopyTemplateOptions): string[] {
  const workerFolder = options.workerOf && options.template.worker !== undefined ? `${options.template.name}/${options.template.worker}` : undefined
  const files = workerFolder === undefined ? templateFiles(options.cliRoot, options.template) : templateFolderFiles(options.cliRoot, workerFolder)
  // Where vendor/ of the Python and Rust SDKs goes, and how a written path names it.
  const vendorRoot = workerFolder === undefined ? options.directory : options.workerOf!.projectRoot
  const relativeToTarget = (absolute: string) => relative(options.directory, absolute).split(sep).join('/')
  const needsSdk = files.some((file) => posix.basename(file.path) === 'package.json' && dependsOnAny(readFileSync(file.source, 'utf8'), ['svc-sdk']))
  const tarball = needsSdk ? sdkTarball(options.cliRoot, options.cliVersion) : undefined
  const vendored = new Set(tarball ? ['svc-sdk'] : [])
  const written: string[] = []
  if (tarball) {
    const path = posix.join(VENDOR_DIRECTORY, posix.basename(tarball))
    mkdirSync(join(options.directory, VENDOR_DIRECTORY), { recursive: true })
    copyFileSync(tarball, join(options.directory, ...path.split('/')))
    written.push(path)
  }
  // Python and Rust SDKs (issue 18): wheels and crate sources the template's workers depend on by relative path.
  const wheels = new Map<string, string>()
  if (options.template.sdks?.includes('python')) {
    const folder = join(vendorRoot, ...PYTHON_VENDOR_DIRECTORY.split('/'))
    mkdirSync(folder, { recursive: true })
    pythonWheels(options.cliRoot).forEach((wheel, i) => {
      const target = join(folder, basename(wheel))
      copyFileSync(wheel, target)
      wheels.set(PYTHON_DISTRIBUTIONS[i]!.name, target)
      written.push(relativeToTarget(target))
    })
  }
  const rustSdk = join(vendorRoot, ...RUST_VENDOR_DIRECTORY.split('/'))
  if (options.template.sdks?.includes('rust')) {
    const copied = copyRustSdk(rustSdkDirectory(options.cliRoot), rustSdk)
    written.push(...copied.map((rel) => relativeToTarget(join(rustSdk, ...rel.split('/')))))
  }
  for (const file of files) {
    const target = join(options.directory, ...file.path.split('/'))
    mkdirSync(dirname(target), { recursive: true })
    const bytes = readFileSync(file.source)
    const mode = statSync(file.source).mode & 0o777
    if (bytes.includes(0)) {
      // Binary: copied as is.
      writeFileSync(target, bytes, { mode })
    } else {
      let text = substitute(bytes.toString('utf8'), {
        project_name: options.name,
        worker_name: workerNameFor(file.path, options.name),
        svc_version: options.cliVersion,
      })
      const base = posix.basename(file.path)
      if (base === 'package.json') text = withDependencySpecifiers(text, dependencySpecifiers(vendored, posix.dirname(file.path).replace(/^\.$/, ''), options.cliVersion))
      if (base === 'svc.worker.yaml') text = withPackageManager(text, options.packageManager)
      if (base === 'requirements.txt' && wheels.size > 0) text = withVendoredWheels(text, wheels, dirname(target))
      if (base === 'Cargo.toml' && options.template.sdks?.includes('rust')) text = withVendoredCrates(text, rustSdk, dirname(target))
      if (file.path === '.gitignore' && existsSync(target)) text = mergeLines(readFileSync(target, 'utf8'), text)
      writeFileSync(target, text, { mode })
    }
    written.push(file.path)
  }
  if (options.template.browserSdk !== undefined) {
    // The page's SDK: one ES module the project serves itself (vendor.ts).
    const path = options.template.browserSdk
    const target = join(options.directory, ...path.split('/'))
    mkdirSync(dirname(target), { recursive: true })
    copyFileSync(browserSdkBundle(options.cliRoot), target)
    written.push(path)
  }
  return written.sort()
}

/**
 * A requirements.txt whose lines naming a vendored distribution alone (`svc-sdk`, `svc-helpers`)
 * name its wheel instead (`wheels`: name → absolute path), by a path relative to `directory` (the
 * worker's, absolute; pip runs there), so pip installs svc's packages from the project and never
 * looks them up in an index.
 *
 * @example withVendoredWheels('svc-sdk\n', new Map([['svc-sdk', '/p/vendor/python/svc_sdk-0.1.0-py3-none-any.whl']]), '/p/workers/math')
 * // '../../vendor/python/svc_sdk-0.1.0-py3-none-any.whl\n'
 */
export function withVendoredWheels(requirements: string, wheels: ReadonlyMap<string, string>, directory: string): string {
  return requirements
    .split('\n')
    .map((line) => {
      const wheel = wheels.get(line.trim())
      return wheel === undefined ? line : relativePath(directory, wheel)
    })
    .join('\n')
}

/**
 * A Cargo.toml whose `path = "…vendor/rust/<crate>"` dependencies point at `rustSdk` (absolute)
 * from `directory` (the crate's, absolute): the template writes them for its own layout
 * (`../../vendor/rust/svc-sdk` from `workers/<name>/`), a worker scaffolded elsewhere gets its own.
 *
 * @example withVendoredCrates('svc-sdk = { path = "../../vendor/rust/svc-sdk" }', '/p/vendor/rust', '/p/services/billing')
 * // 'svc-sdk = { path = "../../vendor/rust/svc-sdk" }'
 */
export function withVendoredCrates(cargoToml: string, rustSdk: string, directory: string): string {
  return cargoToml.replace(/(\bpath\s*=\s*")(?:\.\.\/)*vendor\/rust\/([A-Za-z0-9_-]+")/g, (_, head: string, crate: string) => `${head}${relativePath(directory, rustSdk)}/${crate}`)
}

/** `to` relative to `from` (both absolute), `/`-separated. */
function relativePath(from: string, to: string): string {
  return relative(from, to).split(sep).join('/')
}

/** `existing` followed by the lines of `added` it does not already have (blank and comment lines aside). */
export function mergeLines(existing: string, added: string): string {
  const have = new Set(existing.split(/\r?\n/).map((l) => l.trim()))
  const missing = added.split(/\r?\n/).filter((l) => l.trim() !== '' && !l.trim().startsWith('#') && !have.has(l.trim()))
  if (missing.length === 0) return existing
  const separator = existing === '' || existing.endsWith('\n') ? '' : '\n'
  return `${existing}${separator}${existing === '' ? '' : '\n'}# svc\n${missing.join('\n')}\n`
}

/**
 * Writes `.svc/project.ini` (cli.md §2), keeping the `project_id` of one already there.
 * @returns the path written, relative to `directory`
 */
export function writeProjectIni(directory: string, fields: { project_name: string; template: string; created_with: string }): string {
  const file = join(directory, ...PROJECT_INI.split('/'))
  const identity = projectIdentity(file, fields)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, formatProjectIni(identity))
  return PROJECT_INI
}
