// Admissions per second, measured: the slope of the waiting room's frontier
// (`admitted`) against its `as_of`, over the samples of the last few seconds.

interface Sample {
  at: number;
  count: number;
}

export class RateMeter {
  private samples: Sample[] = [];

  /** A meter smoothing over `windowMs` of samples. */
  constructor(private readonly windowMs = 5000) {}

  /** Adds the frontier `count` read at `at` (ms since the epoch). */
  add(at: number, count: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && at === last.at) return; // the same cached reading again
    // A clock that went back, or a frontier that started again (a restored queue).
    if (last && (at < last.at || count < last.count)) this.samples = [];
    this.samples.push({ at, count });
    // Keep the newest sample at or before the window's start, and those after it.
    const from = at - this.windowMs;
    while (this.samples.length > 2 && this.samples[1]!.at <= from) this.samples.shift();
  }

  /** Admissions per second over the window; null until it spans about a second. */
  perSecond(): number | null {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.at - first.at < 900) return null;
    return ((last.count - first.count) * 1000) / (last.at - first.at);
  }
}
