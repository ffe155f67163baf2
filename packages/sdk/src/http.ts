/** `svc-sdk/http`: re-exports `svc-helpers/http` (sdk.md §11). */
export type * from 'svc-helpers/http'
