/** Entry point of the console app: mounts {@link App} into `#root`. Bundled by scripts/build-app.mjs. */
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App.tsx'

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
)
