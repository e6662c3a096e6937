// Formatting helpers shared by the widget and the panel.
import type { Timestamp } from "@bufbuild/protobuf/wkt";

export function tsDate(t: Timestamp | undefined): Date | undefined {
  return t ? new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6)) : undefined;
}

/** fiat formats a decimal string with its currency, in the user's locale when the code is ISO 4217. */
export function fiat(amount: string, currency: string, locale: string): string {
  const n = Number(amount);
  try {
    return new Intl.NumberFormat(locale, { style: "currency", currency }).format(n);
  } catch {
    return `${amount} ${currency}`;
  }
}

/** trimUnits drops trailing zeros of a token amount ("25.000000" -> "25") without rounding. */
export function trimUnits(units: string): string {
  return units.includes(".") ? units.replace(/0+$/, "").replace(/\.$/, "") : units;
}

/** clock renders a remaining duration as m:ss (h:mm:ss past an hour). */
export function clock(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return hh > 0 ? `${hh}:${String(mm).padStart(2, "0")}:${ss}` : `${mm}:${ss}`;
}

export function shortHash(h: string): string {
  return h.length > 14 ? `${h.slice(0, 8)}…${h.slice(-6)}` : h;
}
