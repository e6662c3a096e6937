// What the deposit screen makes of a session's deposits. Only an outcome the service will not
// change on its own ends the screen as failed: a deposit below the asset's minimum is credited
// once the address has received the minimum in total, and one whose block left the chain (a
// shallow reorg) is usually mined again within minutes, so for both the widget keeps following.

/** DepositView is the screen for a session's deposits: credited (the result screen), following
 *  a payment (confirming or sweeping), below the minimum, left the chain, failed (the result
 *  screen: only the service team can settle it), or waiting for a payment. */
export type DepositView<D> =
  | { kind: "credited"; deposits: D[] }
  | { kind: "following"; deposit: D }
  | { kind: "belowMinimum"; deposit: D }
  | { kind: "leftChain"; deposit: D }
  | { kind: "failed"; deposit: D }
  | { kind: "waiting" };

/** The statuses a deposit can be in, as the API names them (DepositStatus without its prefix). */
export type StatusName = "CONFIRMING" | "SWEEPING" | "CREDITED" | "ORPHANED" | "UNSWEEPABLE" | "BELOW_MINIMUM" | "REORGED" | string;

/** depositView picks the screen for deposits (oldest first; status names each one's status):
 *  any credited ones first, else the newest deposit on its way, below the minimum, off the
 *  chain, or failed, in that order; an unknown status (a newer server) is waited out. */
export function depositView<D>(deposits: readonly D[], status: (d: D) => StatusName): DepositView<D> {
  const credited = deposits.filter((d) => status(d) === "CREDITED");
  if (credited.length > 0) return { kind: "credited", deposits: credited };
  const newest = (...names: StatusName[]) => {
    const matching = deposits.filter((d) => names.includes(status(d)));
    return matching.length > 0 ? matching[matching.length - 1] : undefined;
  };
  const following = newest("CONFIRMING", "SWEEPING");
  if (following !== undefined) return { kind: "following", deposit: following };
  const below = newest("BELOW_MINIMUM");
  if (below !== undefined) return { kind: "belowMinimum", deposit: below };
  const left = newest("ORPHANED");
  if (left !== undefined) return { kind: "leftChain", deposit: left };
  const failed = newest("UNSWEEPABLE", "REORGED");
  if (failed !== undefined) return { kind: "failed", deposit: failed };
  return { kind: "waiting" };
}
