import { defineConfig } from 'vitest/config'

// a test may wait as long as the caller lets it: the runner's own timeout stops a hang
export default defineConfig({ test: { testTimeout: 600_000 } })
