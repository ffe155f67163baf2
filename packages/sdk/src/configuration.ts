/**
 * Input, result and event types of the configuration worker (`configuration`, builtins.md §11),
 * re-exported from `svc-protocol`. Types only.
 *
 * @example
 * import type { ConfigurationEventData, ConfigurationTriggerConfig } from 'svc-sdk/configuration'
 * svc.registerFunction('app::on-settings', (event: ConfigurationEventData<AppSettings>) => apply(event.new_value))
 * svc.registerTrigger({ type: 'configuration', function_id: 'app::on-settings', config: { configuration_id: 'app' } satisfies ConfigurationTriggerConfig })
 */
export type * from 'svc-protocol/payloads/configuration'
