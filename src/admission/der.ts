// A strict reader of ASN.1 DER/BER framing for the two structures admission reads: PKCS#7 SignedData (the
// instance identity signature) and PKCS#10 (kubelet CSRs). It only frames bytes; every cryptographic check is
// node:crypto (OpenSSL). Node built-ins only: this file is shipped to the masters in the service's ConfigMap.

/** One TLV: `tag` is the identifier octet; `start`/`end` bound the value; `offset` is where the TLV begins. */
export interface Tlv {
    tag: number;
    offset: number;
    start: number;
    end: number;
    /** Indefinite-length (BER) encoding: the value ends with 00 00 before `end`. */
    indefinite: boolean;
}

/** Reads the TLV at `offset`; throws on anything truncated or malformed. */
export function readTlv(buf: Buffer, offset: number, limit = buf.length): Tlv {
    if (offset + 2 > limit) throw new Error(`ASN.1: truncated at ${offset}`);
    const tag = buf[offset];
    if ((tag & 0x1f) === 0x1f) throw new Error(`ASN.1: multi-byte tags are not expected (at ${offset})`);
    let pos = offset + 1;
    const first = buf[pos++];
    if (first === 0x80) {
        if ((tag & 0x20) === 0) throw new Error(`ASN.1: indefinite length on a primitive value (at ${offset})`);
        let p = pos;
        while (true) {
            if (p + 2 > limit) throw new Error(`ASN.1: unterminated indefinite length (at ${offset})`);
            if (buf[p] === 0 && buf[p + 1] === 0) return { tag, offset, start: pos, end: p + 2, indefinite: true };
            p = readTlv(buf, p, limit).end;
        }
    }
    let len = first;
    if (first & 0x80) {
        const n = first & 0x7f;
        if (n === 0 || n > 4) throw new Error(`ASN.1: unsupported length of ${n} octets (at ${offset})`);
        if (pos + n > limit) throw new Error(`ASN.1: truncated length (at ${offset})`);
        len = 0;
        for (let i = 0; i < n; i++) len = len * 256 + buf[pos++];
    }
    if (pos + len > limit) throw new Error(`ASN.1: value of ${len} bytes overruns its container (at ${offset})`);
    return { tag, offset, start: pos, end: pos + len, indefinite: false };
}

/** The value bytes (without the end-of-contents octets of an indefinite length). */
export function valueOf(buf: Buffer, t: Tlv): Buffer {
    return buf.subarray(t.start, t.indefinite ? t.end - 2 : t.end);
}

/** The whole TLV as encoded. */
export function encodedOf(buf: Buffer, t: Tlv): Buffer {
    return buf.subarray(t.offset, t.end);
}

/** The children of a constructed TLV. */
export function childrenOf(buf: Buffer, t: Tlv): Tlv[] {
    if ((t.tag & 0x20) === 0) throw new Error(`ASN.1: tag 0x${t.tag.toString(16)} is not constructed`);
    const out: Tlv[] = [];
    const stop = t.indefinite ? t.end - 2 : t.end;
    for (let p = t.start; p < stop;) {
        const c = readTlv(buf, p, stop);
        out.push(c);
        p = c.end;
    }
    return out;
}

/** Parses a whole buffer as one TLV (nothing may follow it). */
export function parseRoot(buf: Buffer): Tlv {
    const t = readTlv(buf, 0);
    if (t.end !== buf.length) throw new Error("ASN.1: trailing bytes after the structure");
    return t;
}

/** Throws unless `t` has tag `tag`. */
export function expectTag(t: Tlv | undefined, tag: number, what: string): Tlv {
    if (!t || t.tag !== tag) throw new Error(`ASN.1: ${what}: expected tag 0x${tag.toString(16)}, got ${t ? "0x" + t.tag.toString(16) : "nothing"}`);
    return t;
}

/** Decodes an OBJECT IDENTIFIER value to dotted form. */
export function oidOf(buf: Buffer, t: Tlv): string {
    expectTag(t, 0x06, "object identifier");
    const v = valueOf(buf, t);
    if (v.length === 0) throw new Error("ASN.1: empty object identifier");
    const parts: number[] = [];
    let n = 0;
    for (const b of v) {
        n = n * 128 + (b & 0x7f);
        if ((b & 0x80) === 0) {
            parts.push(n);
            n = 0;
        }
    }
    const first = parts.shift()!;
    return [Math.min(2, Math.floor(first / 40)), first - 40 * Math.min(2, Math.floor(first / 40)), ...parts].join(".");
}

/** The octets of an OCTET STRING, primitive or (BER) constructed. */
export function octetsOf(buf: Buffer, t: Tlv): Buffer {
    if (t.tag === 0x04) return valueOf(buf, t);
    if (t.tag === 0x24) return Buffer.concat(childrenOf(buf, t).map((c) => octetsOf(buf, c)));
    throw new Error(`ASN.1: expected an OCTET STRING, got tag 0x${t.tag.toString(16)}`);
}

/** String value of a directory string (UTF8String, PrintableString, IA5String, T61String, BMPString). */
export function stringOf(buf: Buffer, t: Tlv): string {
    const v = valueOf(buf, t);
    switch (t.tag) {
        case 0x0c: case 0x13: case 0x16: case 0x14: return v.toString(t.tag === 0x0c ? "utf8" : "latin1");
        case 0x1e: return Buffer.from(v).swap16().toString("utf16le");
        default: throw new Error(`ASN.1: tag 0x${t.tag.toString(16)} is not a string`);
    }
}
