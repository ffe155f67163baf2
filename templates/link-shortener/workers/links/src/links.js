/**
 * The link shortener's HTTP handlers. Each receives the request object of its `http` trigger
 * (`{method, path, path_params, query_params, headers, body}`) and returns a response descriptor
 * (`{status_code, headers?, body?}`). Links live in the state worker, scope `links`, key = short
 * code: `{ code, url, visits, created_at }`.
 */
import { randomBytes } from 'node:crypto'

const SCOPE = 'links'
const CODE_PATTERN = /^[A-Za-z0-9_-]{1,64}$/
const ALPHABET = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789'

/** @param {unknown} value @returns {string | undefined} an error message, or undefined when `value` is an http(s) URL */
function checkUrl(value) {
  if (value === undefined || value === null || value === '') return 'url is required'
  if (typeof value !== 'string') return 'url must be a string'
  let parsed
  try {
    parsed = new URL(value)
  } catch {
    return 'url must be an absolute http or https URL'
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'url must be an absolute http or https URL'
  return undefined
}

function newCode() {
  const bytes = randomBytes(7)
  let code = ''
  for (const b of bytes) code += ALPHABET[b % ALPHABET.length]
  return code
}

const json = (status_code, body) => ({ status_code, body })
const error = (status_code, message) => json(status_code, { error: message })

/**
 * Builds the handlers around a connected svc client.
 * @param {import('svc-sdk').SvcClient} client a connected svc client
 */
export function linkHandlers(client) {
  const state = (fn, payload) => client.trigger({ function_id: `state::${fn}`, payload })

  return {
    /** POST /links {url, code?} → 201 {code, url}; 400 {error}; 409 {error} when the code exists. */
    async create(req) {
      const body = req.body && typeof req.body === 'object' ? req.body : {}
      const problem = checkUrl(body.url)
      if (problem) return error(400, problem)
      let code = body.code
      if (code !== undefined && code !== null) {
        if (typeof code !== 'string' || !CODE_PATTERN.test(code)) {
          return error(400, 'code must be 1-64 characters of letters, digits, - or _')
        }
        if ((await state('get', { scope: SCOPE, key: code })) !== undefined) {
          return error(409, `code '${code}' is already taken`)
        }
      } else {
        do code = newCode()
        while ((await state('get', { scope: SCOPE, key: code })) !== undefined)
      }
      const link = { code, url: body.url, visits: 0, created_at: new Date().toISOString() }
      await state('set', { scope: SCOPE, key: code, value: link })
      return json(201, { code, url: link.url })
    },

    /** GET /s/:code → 302 with Location, counting the visit; 404 when unknown. */
    async redirect(req) {
      const code = req.path_params.code
      const link = await state('get', { scope: SCOPE, key: code })
      if (link === undefined) return error(404, `no link with code '${code}'`)
      await state('update', { scope: SCOPE, key: code, ops: [{ type: 'increment', path: 'visits', by: 1 }] })
      return { status_code: 302, headers: { location: link.url } }
    },

    /** PUT /links/:code {url} → 200 {code, url}; 400 {error}; 404 when unknown. */
    async update(req) {
      const code = req.path_params.code
      const body = req.body && typeof req.body === 'object' ? req.body : {}
      const problem = checkUrl(body.url)
      if (problem) return error(400, problem)
      if ((await state('get', { scope: SCOPE, key: code })) === undefined) return error(404, `no link with code '${code}'`)
      await state('update', { scope: SCOPE, key: code, ops: [{ type: 'set', path: 'url', value: body.url }] })
      return json(200, { code, url: body.url })
    },

    /** GET /links/:code → 200 {code, url, visits, created_at}; 404 when unknown. */
    async get(req) {
      const code = req.path_params.code
      const link = await state('get', { scope: SCOPE, key: code })
      if (link === undefined) return error(404, `no link with code '${code}'`)
      return json(200, link)
    },
  }
}
