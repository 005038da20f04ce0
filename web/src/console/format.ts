// How the console writes numbers, shares, times and enum values.

import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";

/** `9.8`: one decimal, a dot, no grouping (the dashboard's rates). */
export function oneDecimal(value: number): string {
  return (Math.round(value * 10) / 10).toFixed(1);
}

/** `12.5 %` of a share from 0 to 1. */
export function percent(share: number): string {
  return `${oneDecimal(share * 100)} %`;
}

/** A count as the reader's locale writes it (`12,345`). */
export function count(value: number | bigint): string {
  return new Intl.NumberFormat().format(value);
}

/** Milliseconds since the epoch of a timestamp; null when unset. */
export function ms(ts: Timestamp | undefined): number | null {
  return ts ? timestampMs(ts) : null;
}

/** `14:02:11`: a time of day in the reader's locale. */
export function clock(at: number): string {
  return new Date(at).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** A date and time in the reader's locale; "—" when unset. */
export function dateTime(ts: Timestamp | undefined): string {
  const at = ms(ts);
  return at === null ? "—" : new Date(at).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** The name of an enum value: `ON_SALE` of `EventStatus.ON_SALE`, "" when unknown. */
export function enumName(values: Record<number, string>, value: number): string {
  return values[value] ?? "";
}

/** `On sale` of `ON_SALE`. */
export function words(name: string): string {
  const lower = name.toLowerCase().replace(/_/g, " ");
  return lower.charAt(0).toUpperCase() + lower.slice(1);
}
