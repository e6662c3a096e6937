// EIP-55 mixed-case checksum addresses, checked as the user types the withdrawal destination.
import { keccak_256 } from "@noble/hashes/sha3.js";

export type AddressCheck = "empty" | "partial" | "invalid" | "checksum" | "lowercase" | "valid";

/** toChecksum returns the EIP-55 form of a 0x-prefixed 40-hex address. */
export function toChecksum(address: string): string {
  const hex = address.slice(2).toLowerCase();
  const hash = keccak_256(new TextEncoder().encode(hex));
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const nibble = (hash[i >> 1] >> (i % 2 === 0 ? 4 : 0)) & 0xf;
    out += nibble >= 8 ? hex[i].toUpperCase() : hex[i];
  }
  return out;
}

/** checkAddress classifies input: "valid" (correct checksum or all upper-case hex), "lowercase"
 *  (all lower-case: accepted, carries no checksum), "checksum" (mixed case that does not match:
 *  a typo), "partial" (a prefix of an address), "invalid". The zero address is invalid. */
export function checkAddress(input: string): AddressCheck {
  const s = input.trim();
  if (s === "") return "empty";
  if (/^0x[0-9a-fA-F]{40}$/.test(s)) {
    if (/^0x0{40}$/.test(s)) return "invalid";
    const body = s.slice(2);
    if (body === body.toLowerCase()) return "lowercase";
    if (body === body.toUpperCase()) return "valid";
    return toChecksum(s) === s ? "valid" : "checksum";
  }
  if (/^(0|0x[0-9a-fA-F]{0,39})$/.test(s)) return "partial";
  return "invalid";
}
