/**
 * Serves the built single-page app (`dist/app`): files by path, `index.html` for any other path
 * (SPA fallback), and a plain page when the app was not built.
 */
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { extname, join, normalize, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** `packages/console/dist/app`, from both `src/server` and `dist/server`. */
export const DEFAULT_APP_DIR = fileURLToPath(new URL('../../dist/app', import.meta.url))

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
}

/** Shown instead of the app when `dist/app/index.html` is missing. */
export const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svc console</title></head>
<body><h1>svc console</h1>
<p>The console app was not built. Run <code>node packages/console/scripts/build-app.mjs</code> (or <code>npm run build</code> in packages/console) and reload.</p>
<p>The API is available: <a href="/api/info">/api/info</a>.</p>
</body></html>
`

/** Answers a GET/HEAD for a non-API path from `appDir`. */
export async function serveApp(appDir: string, req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
  let decoded: string
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    decoded = '/'
  }
  const root = normalize(appDir + sep)
  const candidate = normalize(join(root, decoded))
  // A path that climbs out of the app folder (or holds NUL) falls back to index.html.
  const file = candidate.startsWith(root) && !decoded.includes('\0') && candidate !== root ? candidate : undefined
  if (file !== undefined && (await isFile(file))) return sendFile(req, res, file, !file.endsWith('.html'))
  const index = join(root, 'index.html')
  if (await isFile(index)) return sendFile(req, res, index, false)
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
  res.end(req.method === 'HEAD' ? undefined : NOT_BUILT_PAGE)
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile()
  } catch {
    return false
  }
}

function sendFile(req: IncomingMessage, res: ServerResponse, file: string, cacheable: boolean): void {
  res.writeHead(200, {
    'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
    // Hashed assets may be cached; index.html must be re-read so a rebuilt app shows at once.
    'cache-control': cacheable ? 'public, max-age=3600' : 'no-cache',
    'x-content-type-options': 'nosniff',
  })
  if (req.method === 'HEAD') {
    res.end()
    return
  }
  const stream = createReadStream(file)
  stream.on('error', () => res.destroy())
  stream.pipe(res)
}
