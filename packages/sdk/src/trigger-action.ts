/** Builders of the routing action of an invocation (sdk.md §6): the client core's. */
export { TriggerAction } from 'svc-protocol/client'
