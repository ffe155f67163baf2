/**
 * `svc-sdk/http`: re-exports `svc-helpers/http` (sdk.md §11) — the HTTP request and response
 * shapes and the streaming helper `http()`.
 *
 * @example
 * import { http } from 'svc-sdk/http'
 * client.registerFunction('files::download', http(async (req, res) => {
 *   res.status(200).headers({ 'content-type': 'text/plain' })
 *   res.stream.write('hello ')
 *   res.stream.end('world')
 * }))
 */
export * from 'svc-helpers/http'
