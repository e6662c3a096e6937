// The full-page flow's way back to the operator: its Redirect URL with status appended.

export type ReturnStatus = "success" | "cancelled";

/** returnURL is the operator's redirect URL with status=<status> appended to its query, as
 *  the spec says; or null when it is not an absolute http(s) URL. The operator's own query is
 *  kept byte for byte (a URLSearchParams round trip would re-encode it: "a%20b" to "a+b",
 *  "flag" to "flag="), its own parameters included, even one named status: ours comes last. */
export function returnURL(redirect: string, status: ReturnStatus): string | null {
  if (!/^https?:/i.test(redirect)) return null;
  let u: URL;
  try {
    u = new URL(redirect);
  } catch {
    return null;
  }
  const query = u.search.slice(1);
  const sep = query === "" || query.endsWith("&") ? "" : "&";
  u.search = `${query}${sep}status=${status}`;
  return u.toString();
}
