export function ConfigurationPage(_props: { id?: string }) { return <p>TODO</p> }
