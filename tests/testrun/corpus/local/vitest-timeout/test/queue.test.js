import { describe, expect, it } from 'vitest'
import { createQueue } from '../src/queue.js'

describe('queue', () => {
  it('starts empty', () => {
    expect(createQueue().size()).toBe(0)
  })
  it('counts pushed jobs', () => {
    const q = createQueue()
    q.push(async () => 1)
    expect(q.size()).toBe(1)
  })
  it('drains every job in order', async () => {
    const q = createQueue()
    for (let i = 0; i < 3; i++) q.push(async () => i)
    expect(await q.drain()).toEqual([0, 1, 2])
  })
})
