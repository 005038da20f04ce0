// A refresh loop: runs its work every period while the tab is visible, one run at a
// time (a tick that comes while the previous run is still going is skipped); stops
// while the tab is hidden and starts again, at once, when it is shown. Each panel has
// its own, and its calls a deadline, so a skipped tick waits on that panel alone and
// for no longer than the deadline.

export class Ticker {
  private timer: number | undefined;
  private running = false;
  private stopped = false;
  private readonly onVisibility = () => (document.hidden ? this.pause() : this.resume());

  constructor(
    private readonly periodMs: number,
    private readonly work: () => Promise<void>,
  ) {}

  /** Starts ticking (at once, if the tab is visible). */
  start(): void {
    this.stopped = false;
    document.addEventListener("visibilitychange", this.onVisibility);
    this.resume();
  }

  /** Stops for good (the view is gone). */
  stop(): void {
    this.stopped = true;
    document.removeEventListener("visibilitychange", this.onVisibility);
    this.pause();
  }

  /** Runs the work now, unless a run is under way (then this tick is skipped). */
  tick(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    void this.work()
      .catch(() => undefined)
      .finally(() => {
        this.running = false;
      });
  }

  private resume(): void {
    if (this.stopped || document.hidden || this.timer !== undefined) return;
    this.timer = window.setInterval(() => this.tick(), this.periodMs);
    this.tick();
  }

  private pause(): void {
    window.clearInterval(this.timer);
    this.timer = undefined;
  }
}
