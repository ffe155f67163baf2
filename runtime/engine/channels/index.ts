/**
 * Channels (protocol.md §9, §11.3): the registry the engine holds, the shapes built-ins program
 * against (`LocalChannels`) and the limits.
 */
export { ChannelRegistry, type ChannelRegistryOptions, type ChannelTicket, type SocketEndOptions } from './registry.ts'
export type { SocketWatch } from './socket-ends.ts'
export * from './types.ts'
