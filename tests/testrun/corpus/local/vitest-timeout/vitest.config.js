import { defineConfig } from 'vitest/config'

// a test may wait as long as the caller lets it: the runner's own timeout stops a hang.
// The results cache (which orders the files of the next run) stays in this copy of the project: node_modules is
// shared between copies, and a cache there would let one copy's hanging file run first in another.
export default defineConfig({ cacheDir: '.vitest-cache', test: { testTimeout: 600_000 } })
