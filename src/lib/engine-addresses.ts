/**
 * The CLI's engine addresses (cli.md §1, issue 19 §3): `--engine` and `SVC_URL` take one `ws://`
 * URL or several separated by commas, as the SDKs read `SVC_URL`, so a shell that exports a
 * fleet's list for its workers can run `svc` commands too. A command tries the addresses in order
 * and talks to the first engine that answers (`connectFirst` in `trigger.ts`). Messages name an
 * address only through {@link shownAddress}: never its user, password, query or fragment.
 *
 * @example
 * addressList('ws://10.0.0.1:49134, ws://10.0.0.2:49134') // ['ws://10.0.0.1:49134', 'ws://10.0.0.2:49134']
 * shownAddresses('ws://u:pw@10.0.0.1:49134/?token=t,ws://10.0.0.2:49134') // 'ws://10.0.0.1:49134, ws://10.0.0.2:49134'
 */
import { displayAddress, engineAddresses, splitAddressList } from 'svc-protocol/client'
import { CliCodes, CliError, ExitCode } from './errors.ts'

/**
 * The addresses of an address text, in order: the text split at commas, each entry trimmed and
 * checked by the client core's `engineAddresses` (a `ws:`/`wss:` URL; at most
 * `MAX_ENGINE_ADDRESSES`). A comma inside one address is written `%2C`.
 *
 * @throws {CliError} `INVALID_ARGUMENT` (exit 2) naming the entry by position (`engine address 2
 *   of 3 is empty …`), an entry shown only as {@link shownAddress} shows it.
 */
export function addressList(text: string): readonly string[] {
  return checked(() => engineAddresses(splitAddressList(text)))
}

/**
 * One address, checked as {@link addressList} checks each entry; not split (a comma in it is part
 * of it, as the client core reads a single address).
 *
 * @throws {CliError} `INVALID_ARGUMENT` (exit 2), the address shown only as {@link shownAddress} shows it.
 */
export function oneAddress(url: string): string {
  return checked(() => engineAddresses(url))[0]!
}

function checked(check: () => readonly string[]): readonly string[] {
  try {
    return check()
  } catch (err) {
    throw new CliError({
      code: CliCodes.InvalidArgument,
      message: `Invalid engine URL: ${(err as Error).message}`,
      hint: 'give a ws://host:port URL, or several separated by commas (--engine, SVC_URL)',
      exitCode: ExitCode.Usage,
    })
  }
}

/**
 * An address as the CLI's messages show it: `displayAddress` (scheme, host, port, path; no user,
 * password, query or fragment), without the lone `/` of an empty path, so `ws://127.0.0.1:49134`
 * reads as typed. `(not a URL)` for text that does not parse.
 */
export function shownAddress(address: string): string {
  const shown = displayAddress(address)
  const pathStart = shown.indexOf('/', shown.indexOf('//') + 2)
  return pathStart !== -1 && pathStart === shown.length - 1 ? shown.slice(0, -1) : shown
}

/** Every address of an address text as {@link shownAddress} shows it, joined with `, `. */
export function shownAddresses(text: string): string {
  return splitAddressList(text).map(shownAddress).join(', ')
}
