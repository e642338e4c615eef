// Pacing and busy-time functions shared by the stdio driver and the HTTP load client.

import { performance } from "node:perf_hooks";

/** Waits so that no `windowMs` span holds more than `frames` client sends (0 = never waits). */
export class FramePacer {
  constructor(frames, windowMs) {
    this.frames = frames;
    this.windowMs = windowMs;
    this.sent = [];
  }

  async take(count = 1) {
    if (this.frames === 0) return;
    for (let k = 0; k < count; k++) {
      for (;;) {
        const now = performance.now();
        while (this.sent.length && now - this.sent[0] >= this.windowMs) this.sent.shift();
        if (this.sent.length < this.frames) break;
        const wait = this.windowMs - (now - this.sent[0]) + 1;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
      this.sent.push(performance.now());
    }
  }
}

/** Total length of the union of [start, end] intervals, in ms. */
export function busyMs(intervals) {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let [curStart, curEnd] = sorted[0] ?? [0, 0];
  for (const [start, end] of sorted.slice(1)) {
    if (start > curEnd) {
      total += curEnd - curStart;
      curStart = start;
      curEnd = end;
    } else if (end > curEnd) curEnd = end;
  }
  return total + (curEnd - curStart);
}
